/**
 * Keyset paging of the listings (GET /v1/workflows, GET /v1/questions, /ui):
 * newest first, and rows that move between two page reads are never shown
 * twice while rows that did not move are never skipped.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeListingCursor, pageByKeyset } from '../src/journal/listing.ts';

interface Row {
  id: string;
  sortKey: number;
}
const key = (row: Row) => ({ sortKey: row.sortKey, id: row.id });
const rowsArbitrary = fc.uniqueArray(fc.record({ id: fc.stringMatching(/^[A-Za-z0-9._|-]{1,20}$/), sortKey: fc.integer({ min: 0, max: 50 }) }), { selector: (row) => row.id, maxLength: 60 });

/** Reads every page; `between` may change the rows after each page. */
function readAll(rows: Row[], limit: number, between: (rows: Row[], page: number) => void = () => undefined): Row[][] {
  const pages: Row[][] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 200; page += 1) {
    const result = pageByKeyset([...rows], key, limit, cursor);
    pages.push(result.items.map((row) => ({ ...row })));
    if (!result.cursor) return pages;
    expect(decodeListingCursor(result.cursor)).toBeDefined();
    cursor = result.cursor;
    between(rows, page);
  }
  throw new Error('paging did not end');
}

describe('keyset paging', () => {
  it('every row exactly once, newest first then by id', () => {
    fc.assert(
      fc.property(rowsArbitrary, fc.integer({ min: 1, max: 7 }), (rows, limit) => {
        const seen = readAll(rows, limit).flat();
        const expected = [...rows].sort((a, b) => b.sortKey - a.sortKey || a.id.localeCompare(b.id));
        expect(seen).toEqual(expected);
      }),
    );
  });

  it('rows updated between pages (moved to the front) never repeat; rows that did not move are never skipped', () => {
    fc.assert(
      fc.property(rowsArbitrary, fc.integer({ min: 1, max: 7 }), fc.array(fc.nat(), { maxLength: 10 }), (rows, limit, touches) => {
        const moved = new Set<string>();
        const pages = readAll(rows, limit, (current, page) => {
          const index = touches[page];
          if (index === undefined || current.length === 0) return;
          const row = current[index % current.length]!;
          row.sortKey = 1_000 + page; // an update makes it the newest
          moved.add(row.id);
        });
        const ids = pages.flat().map((row) => row.id);
        expect(new Set(ids).size).toBe(ids.length);
        for (const row of rows) if (!moved.has(row.id)) expect(ids).toContain(row.id);
      }),
    );
  });

  it('a malformed cursor decodes to undefined', () => {
    for (const cursor of ['', 'x', Buffer.from('abc|id').toString('base64url'), Buffer.from('12|').toString('base64url')]) {
      expect(decodeListingCursor(cursor)).toBeUndefined();
    }
  });
});
