/**
 * question36 (task B): applyStatus-5.lua's argument layout has one description on each side, the script's `AT_*` locals
 * and status-scripts.ts `APPLY_STATUS_ARGV`; the encoder puts every argument at its named position. A merge once moved
 * the script's layout under a hand-written `25 + 4 * N` in the encoder. This test fails when the two sides differ, when
 * the script reads an ARGV position from 16 on by a number of its own, or when the encoder puts an argument elsewhere.
 * No Redis: the script's text and the encoder only (the behaviour is the journal's tests': artifact-limits,
 * status-result-limit-property, question-words-*).
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { APPLY_STATUS_ARGV, STATUS_ARGUMENTS_ALWAYS, applyStatusScript } from '../../packages/shared/src/journal/status-scripts.ts';
import { QUESTION_CUTS_KEPT } from '../../packages/shared/src/journal/question-words.ts';
import type { StatusChange } from '../../packages/shared/src/journal/status.ts';

const LUA = readFileSync(new URL('../../packages/shared/src/journal/lua/applyStatus-5.lua', import.meta.url), 'utf8');

/** The script's code without its comments (the header block and `--` to the end of a line). */
const code = LUA.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--[^\n]*/g, '');

/** `artifactBytesLimit` → `AT_ARTIFACT_BYTES_LIMIT`. */
const luaName = (name: string): string => `AT_${name.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase()}`;

/** The script's `local AT_X, AT_Y = 16, 17` lines, as name → position. */
function luaPositions(): Map<string, number> {
  const positions = new Map<string, number>();
  for (const [, names, values] of code.matchAll(/local\s+(AT_[A-Z_]+(?:\s*,\s*AT_[A-Z_]+)*)\s*=\s*([\d\s,]+)\n/g)) {
    const nameList = names!.split(',').map((name) => name.trim());
    const valueList = values!.split(',').map((value) => Number(value.trim()));
    expect(valueList).toHaveLength(nameList.length);
    nameList.forEach((name, index) => {
      expect(positions.has(name), `${name} assigned twice`).toBe(false);
      positions.set(name, valueList[index]!);
    });
  }
  return positions;
}

describe('applyStatus-5.lua argument layout (question36)', () => {
  it('the script’s AT_* positions are status-scripts.ts APPLY_STATUS_ARGV, name for name', () => {
    const expected = new Map(Object.entries(APPLY_STATUS_ARGV).map(([name, at]) => [luaName(name), at]));
    expect(luaPositions()).toEqual(expected);
    // One argument a position, right after those every call sends; the artifact quadruples last (their count varies).
    const sorted = Object.values(APPLY_STATUS_ARGV).toSorted((a, b) => a - b);
    expect(sorted).toEqual(sorted.map((_, index) => STATUS_ARGUMENTS_ALWAYS + 1 + index));
    expect(Math.max(...sorted)).toBe(APPLY_STATUS_ARGV.artifacts);
  });

  it('the script keeps as many ids of a question words cut as question-words.ts reads (CUTS_KEPT)', () => {
    expect(Number(/local CUTS_KEPT = (\d+)\n/.exec(code)?.[1])).toBe(QUESTION_CUTS_KEPT);
  });

  it('the script reads no ARGV position from 16 on by a number of its own', () => {
    const literal = [...code.matchAll(/ARGV\[\s*(\d+)\s*\]/g)].map((match) => Number(match[1])).filter((at) => at > STATUS_ARGUMENTS_ALWAYS);
    expect(literal).toEqual([]);
    for (const name of luaPositions().keys()) expect(code.includes(`ARGV[${name}`), `${name} unused`).toBe(true);
  });

  it('property: the encoder puts each argument at its named position, the artifacts and what follows them by N', () => {
    const change = fc.record(
      {
        message: fc.boolean(),
        result: fc.boolean(),
        error: fc.boolean(),
        named: fc.boolean(),
        stream: fc.boolean(),
        unsent: fc.boolean(),
        cut: fc.boolean(),
        artifacts: fc.option(fc.nat(4), { nil: undefined }),
        overLimit: fc.boolean(),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(change, (c) => {
        const input: StatusChange = {
          mode: 'event',
          state: c.overLimit ? 'COMPLETED' : 'WORKING',
          ...(c.message ? { statusMessage: { messageId: 'sm', role: 'ROLE_AGENT', parts: [{ text: 'hi' }] } } : {}),
          ...(c.result ? { result: { r: 1 } } : {}),
          ...(c.error ? { error: { code: 'E', message: 'e', retryable: false } } : {}),
          ...(c.named ? { namedTaskUnread: true as const } : {}),
          ...(c.stream ? { stream: 's1' } : {}),
          ...(c.unsent ? { unsent: { sendStartedAt: 7 } } : {}),
          ...(c.cut ? { wordsCut: 'cut-id' } : {}),
          ...(c.artifacts !== undefined ? { artifacts: Array.from({ length: c.artifacts }, (_, i) => ({ artifactId: `a${i}`, parts: [{ text: `p${i}` }] })) } : {}),
          ...(c.overLimit ? { overLimitIfResult: { code: 'LIMIT_EXCEEDED', message: 'cut', retryable: false } } : {}),
        } as StatusChange;
        const argv = applyStatusScript.encode({ change: input, nowMs: 1, binding: 'bound', checkHere: false, heldVersion: 3, artifactBytesPerDelegation: 1000, artifactsPerDelegation: 50 }).map(String);
        const at = (position: number): string => argv[position - 1] ?? '';
        const a = APPLY_STATUS_ARGV;
        expect(argv.length).toBeGreaterThanOrEqual(STATUS_ARGUMENTS_ALWAYS);
        expect(argv.at(-1) === '' && argv.length > STATUS_ARGUMENTS_ALWAYS).toBe(false);
        expect(at(a.statusMessage) !== '').toBe(c.message === true);
        expect(at(a.result)).toBe(c.result ? '{"r":1}' : '');
        expect(at(a.error) !== '').toBe(c.error === true);
        expect(at(a.namedTaskUnread)).toBe(c.named ? '1' : '');
        expect(at(a.stream)).toBe(c.stream ? 's1' : '');
        expect(at(a.unsent)).toBe(c.unsent ? '7' : '');
        expect(at(a.wordsCut)).toBe(c.cut ? 'cut-id' : '');
        const n = c.artifacts ?? 0;
        expect(at(a.artifactCount)).toBe(c.artifacts === undefined ? '' : String(n));
        expect(at(a.artifactBytesLimit)).toBe(c.artifacts === undefined ? '' : '1000');
        for (let i = 0; i < n; i++) expect(at(a.artifacts + 4 * i)).toBe(`a${i}`);
        expect(at(a.artifacts + 4 * n)).toBe(c.artifacts === undefined ? '' : '50');
        expect(JSON.parse(at(a.artifacts + 1 + 4 * n) || 'null')?.code).toBe(c.overLimit ? 'LIMIT_EXCEEDED' : undefined);
      }),
      { numRuns: 300 },
    );
  });
});
