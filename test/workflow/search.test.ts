/**
 * Search through the index (docs/people.md "Search and bulk actions"): by metadata and by id prefix over 50,000 workflows in a bounded number of
 * Redis commands (counted with INFO commandstats, every call inside a script included), the listing past 10,000
 * workflows through the updated index, and a property: for random workflows, metadata and filters, the indexed
 * search returns exactly what a full scan of the workflows (in the test) matches, over every page.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Journal, searchWorkflows, pruneSearchIndex, indexedPairs, SEARCH_METADATA_LIMITS, type WorkflowFilter } from '@durable-a2a/shared';
import { scriptSha, scriptText } from '../../packages/shared/src/journal/scripts.ts';
import { searchMembers } from '../../packages/shared/src/journal/search-index.ts';
import { testsOnCluster, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
let redis: Redis;

beforeAll(() => {
  redis = new Redis(redisServer().url);
});
afterAll(async () => {
  await redis?.quit();
});

const definitionOf = (workflowId: string, metadata: Record<string, unknown>) =>
  JSON.stringify({ workflowId, steps: [{ name: 'main', agent: 'http://agent.test/', message: { text: 'go' } }], maxAttemptsPerStep: 1, metadata });

/** Every command Redis ran since `CONFIG RESETSTAT` (scripts' inner calls included), less the INFO asking. */
async function commandsSinceReset(): Promise<number> {
  const info = await redis.info('commandstats');
  const calls = [...info.matchAll(/calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
  return calls - 1;
}

/** Counts the Redis commands `work` costs (nothing else uses this server meanwhile). */
async function counted<T>(work: () => Promise<T>): Promise<{ result: T; commands: number }> {
  await redis.config('RESETSTAT');
  const result = await work();
  return { result, commands: await commandsSinceReset() };
}

describe.skipIf(testsOnCluster())('search over 50,000 workflows', () => {
  const COUNT = 50_000;
  const BASE_MS = Date.UTC(2026, 0, 1);
  const prefix = 'big';
  const journal = () => new Journal(redis, { prefix, retentionMs: 0 });
  const idOf = (index: number) => `wf-${String(index).padStart(5, '0')}`;
  const metadataOf = (index: number) => ({ tenant: `t${index % 1000}`, region: `r${index % 7}` });

  beforeAll(async () => {
    // Created fast: the journal's own create script, pipelined (no unfinished entries, no first delegation).
    await redis.script('LOAD', scriptText('createWorkflow'));
    const sha = scriptSha('createWorkflow');
    const keys = journal().keys;
    for (let start = 0; start < COUNT; start += 5_000) {
      const pipeline = redis.pipeline();
      for (let index = start; index < Math.min(start + 5_000, COUNT); index++) {
        const workflowId = idOf(index);
        const at = String(BASE_MS + index);
        const fields = { state: 'RUNNING', definition: definitionOf(workflowId, metadataOf(index)), createdAt: at, updatedAt: at, workflowId, version: '1' };
        const members = searchMembers(workflowId, indexedPairs(metadataOf(index)));
        // createWorkflow-11.lua's flat ARGV: the counts, quota, tenant time, ids, no send places, then the fields and the 0/member pairs.
        const args = [Object.keys(fields).length, 0, 0, members.length, '', '', workflowId, at, '', 0, '', '', ...Object.entries(fields).flat(), ...members.flatMap((member) => [0, member])];
        const unused = keys.workflow(workflowId);
        pipeline.evalsha(sha, 11, unused, unused, keys.delegationList(workflowId), unused, keys.search(), keys.updated(), unused, unused, unused, unused, unused, ...args);
      }
      const replies = (await pipeline.exec()) ?? [];
      expect(replies.every(([error, reply]) => error === null && reply === 1)).toBe(true);
    }
    expect(await redis.zcard(keys.updated())).toBe(COUNT);
  }, 120_000);

  it('by metadata: exactly the matching workflows, in a number of commands bounded by the matches, not by 50,000', async () => {
    const { result, commands } = await counted(() => searchWorkflows(journal(), { metadata: { tenant: 't42' } }, { limit: 500 }));
    const expected = Array.from({ length: COUNT }, (_, index) => index).filter((index) => index % 1000 === 42).map(idOf);
    expect(result.items.map((item) => item.workflowId)).toEqual(expected);
    expect(result.cursor).toBeUndefined();
    // Per match: its row (HMGET) and its recent delegations (LRANGE); a few ZRANGEBYLEX for the candidates.
    expect(commands, `${commands} commands for ${expected.length} matches`).toBeLessThanOrEqual(10 + 3 * expected.length);
    console.info(`metadata search over ${COUNT} workflows: ${expected.length} matches, ${commands} Redis commands`);

    const both = await counted(() => searchWorkflows(journal(), { metadata: { tenant: 't42', region: 'r0' } }, { limit: 500 }));
    expect(both.result.items.map((item) => item.workflowId)).toEqual(expected.filter((id) => Number(id.slice(3)) % 7 === 0));
    expect(both.commands).toBeLessThanOrEqual(10 + 3 * expected.length);
  });

  it('by id prefix: exactly the workflows whose id starts with it, bounded the same way', async () => {
    const { result, commands } = await counted(() => searchWorkflows(journal(), { idPrefix: 'wf-0004' }, { limit: 500 }));
    expect(result.items.map((item) => item.workflowId)).toEqual(Array.from({ length: 10 }, (_, index) => idOf(40 + index)));
    expect(commands).toBeLessThanOrEqual(10 + 3 * 10);
    const none = await counted(() => searchWorkflows(journal(), { idPrefix: 'nothing-' }, { limit: 500 }));
    expect(none.result.items).toEqual([]);
    expect(none.commands).toBeLessThanOrEqual(3);
  });

  it('the listing goes past 10,000 workflows: newest first through the updated index, each page bounded by its rows', async () => {
    const PAGES = 22;
    const seen: string[] = [];
    let cursor: string | undefined;
    let mostCommands = 0;
    for (let page = 0; page < PAGES; page++) {
      const { result, commands } = await counted(() => searchWorkflows(journal(), {}, { limit: 500, cursor }));
      mostCommands = Math.max(mostCommands, commands);
      seen.push(...result.items.map((item) => item.workflowId));
      cursor = result.cursor;
      expect(cursor).toBeDefined();
    }
    expect(seen).toEqual(Array.from({ length: PAGES * 500 }, (_, index) => idOf(COUNT - 1 - index)));
    expect(mostCommands).toBeLessThanOrEqual(20 + 3 * 500);
  }, 60_000);
});

describe.skipIf(testsOnCluster())('the indexed search equals a full scan', () => {
  interface Model {
    workflowId: string;
    metadata: Record<string, unknown>;
    createdAt: number;
    state: 'RUNNING' | 'FAILED' | 'NEEDS_ATTENTION';
  }
  const value = fc.oneof(fc.constantFrom('v1', 'v2', 'v3'), fc.integer({ min: 0, max: 2 }), fc.boolean(), fc.constant({ nested: 'v1' }), fc.constant('x'.repeat(200)));
  const workflows = fc.uniqueArray(
    fc.record({
      workflowId: fc.stringMatching(/^[ab][ab.-]{0,4}$/),
      metadata: fc.dictionary(fc.constantFrom('k1', 'k2', 'k3', 'bad key'), value, { maxKeys: 4 }),
      createdAt: fc.integer({ min: 0, max: 20 }),
      state: fc.constantFrom('RUNNING', 'FAILED', 'NEEDS_ATTENTION'),
    }),
    { selector: (workflow) => workflow.workflowId, minLength: 1, maxLength: 25 },
  );
  const filter = fc.record(
    {
      metadata: fc.dictionary(fc.constantFrom('k1', 'k2', 'k3'), fc.constantFrom('v1', 'v2', 'v3', '0', '1', 'true', 'false'), { minKeys: 1, maxKeys: 2 }),
      idPrefix: fc.stringMatching(/^[ab][ab.-]{0,2}$/),
      state: fc.constantFrom('RUNNING', 'FAILED', 'NEEDS_ATTENTION'),
      createdAfterMs: fc.integer({ min: 0, max: 20 }),
      createdBeforeMs: fc.integer({ min: 0, max: 21 }),
    },
    { requiredKeys: [] },
  );

  /** The full scan: every workflow of the model, matched field by field (created times as drawn, before the base). */
  const matches = (workflow: Model, wanted: WorkflowFilter): boolean =>
    (wanted.state === undefined || workflow.state === wanted.state) &&
    (wanted.idPrefix === undefined || workflow.workflowId.startsWith(wanted.idPrefix)) &&
    (wanted.createdAfterMs === undefined || workflow.createdAt >= wanted.createdAfterMs) &&
    (wanted.createdBeforeMs === undefined || workflow.createdAt < wanted.createdBeforeMs) &&
    Object.entries(wanted.metadata ?? {}).every(([key, text]) => {
      const held = workflow.metadata[key];
      return (typeof held === 'string' || typeof held === 'number' || typeof held === 'boolean') && String(held) === text && String(held).length <= SEARCH_METADATA_LIMITS.valueChars;
    });

  let run = 0;
  it('for random workflows, metadata and filters, every page together holds exactly the matching workflows, each once', async () => {
    await fc.assert(
      fc.asyncProperty(workflows, filter, fc.integer({ min: 1, max: 7 }), async (models, drawn, limit) => {
        const base = 1_000_000;
        let now = base + 100;
        const journal = new Journal(redis, { prefix: `prop-${run++}`, retentionMs: 0, now: () => now++ });
        for (const model of models) {
          const at = String(base + model.createdAt);
          await journal.createWorkflow(model.workflowId, { state: 'RUNNING', definition: definitionOf(model.workflowId, model.metadata), createdAt: at, updatedAt: at }, undefined, undefined, model.metadata);
          if (model.state === 'FAILED') await journal.updateWorkflow(model.workflowId, { state: 'FAILED' });
          if (model.state === 'NEEDS_ATTENTION') await journal.updateWorkflow(model.workflowId, { state: 'NEEDS_ATTENTION', attention: { code: 'AMBIGUOUS_SEND', message: 'm' } });
        }
        const wanted: WorkflowFilter = {
          ...drawn,
          ...(drawn.createdAfterMs !== undefined ? { createdAfterMs: base + drawn.createdAfterMs } : {}),
          ...(drawn.createdBeforeMs !== undefined ? { createdBeforeMs: base + drawn.createdBeforeMs } : {}),
        };
        const found: string[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < 100; page++) {
          const result = await searchWorkflows(journal, wanted, { limit, cursor });
          expect(result.items.length).toBeLessThanOrEqual(limit);
          found.push(...result.items.map((item) => item.workflowId));
          cursor = result.cursor;
          if (!cursor) break;
        }
        expect(cursor).toBeUndefined();
        const expected = models.filter((model) => matches(model, drawn)).map((model) => model.workflowId);
        expect([...found].sort()).toEqual([...expected].sort());
        expect(new Set(found).size).toBe(found.length);
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it('indexes at most 16 metadata pairs per workflow (the first in key order), of bounded keys and values', () => {
    const many = Object.fromEntries(Array.from({ length: 20 }, (_, index) => [`key${String(index).padStart(2, '0')}`, `value${index}`]));
    expect(indexedPairs(many)).toEqual(Array.from({ length: 16 }, (_, index) => `key${String(index).padStart(2, '0')}=value${index}`));
    expect(indexedPairs({ ok: 'v', 'bad key': 'v', long: 'x'.repeat(129), nested: { a: 1 }, flag: true, count: 3, empty: '', control: 'a\nb' })).toEqual(['count=3', 'flag=true', 'ok=v']);
  });
});

describe.skipIf(testsOnCluster())('index entries of expired workflows', () => {
  it('are removed by pruneSearchIndex (after the retention) and by a search that meets one; live ones stay', async () => {
    let now = 10_000_000;
    const journal = new Journal(redis, { prefix: 'prune', retentionMs: 1_000, now: () => now });
    for (const id of ['gone-1', 'kept-1']) {
      await journal.createWorkflow(id, { state: 'RUNNING', definition: definitionOf(id, { team: 'p' }), createdAt: String(now), updatedAt: String(now) }, undefined, undefined, { team: 'p' });
    }
    await redis.del(journal.keys.workflow('gone-1')); // as retention's expiry would
    now += 1_000 + 60_000 + 1;
    expect(await pruneSearchIndex(journal)).toBe(1);
    expect(await redis.zrange(journal.keys.search(), 0, -1)).toEqual(['i:kept-1', 'm:team=p\0kept-1', 'w:kept-1\0team=p']);
    expect(await redis.zrange(journal.keys.updated(), 0, -1)).toEqual(['kept-1']);

    await journal.createWorkflow('gone-2', { state: 'RUNNING', definition: definitionOf('gone-2', { team: 'p' }), createdAt: String(now), updatedAt: String(now) }, undefined, undefined, { team: 'p' });
    await redis.del(journal.keys.workflow('gone-2'));
    const found = await searchWorkflows(journal, { metadata: { team: 'p' } }, { limit: 10 });
    expect(found.items.map((item) => item.workflowId)).toEqual(['kept-1']);
    expect(await redis.zrange(journal.keys.updated(), 0, -1)).toEqual(['kept-1']);
  });
});
