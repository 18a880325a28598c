/**
 * The journal's script declarations (journal/scripts.ts `defineScript`) and the one table of script codes and state
 * sets (journal/script-codes.ts): a declaration whose key count is not its file's is refused where it is written, a
 * reply becomes a typed result, and every Lua script returns codes from the table, never a copy of its own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defineScript, fenceDecoder, integerReply, outcomeDecoder, ScriptReplyError, scriptNames, scriptText } from '../src/journal/scripts.ts';
import { luaPrelude, SCRIPT_CODES, scriptCodeName } from '../src/journal/script-codes.ts';
import { applyArtifactThenStatusScript, applyStatusScript } from '../src/journal/status-scripts.ts';
import { FINISHED_STATES, FINISHED_WORKFLOW_STATES, JOURNAL_STATES, JOURNAL_STATE_RANK, PARKED_STATES } from '../src/journal/states.ts';

const LUA = new URL('../src/journal/lua/', import.meta.url);

/**
 * Scripts kept byte for byte as their file: test/journal/command-count.test.ts names takeFollow-2.lua by the digest of
 * its file, so it includes nothing; its one refusal is checked against the table below instead.
 */
const KEPT_AS_FILE: Readonly<Record<string, Record<string, number>>> = { takeFollow: { DELEGATION_MISSING: -1 } };

describe('defineScript', () => {
  it('refuses a declaration whose key count is not the -N.lua suffix of its file, when it is declared', () => {
    const declare = (keys: string[]) => () => defineScript({ name: 'claim', keys, encode: (owner: string) => [owner], decode: fenceDecoder });
    expect(declare(['delegation', 'lease'])).toThrow(/2 keys declared, its file claim-1\.lua takes 1/);
    expect(declare([])).toThrow(/0 keys declared/);
    expect(declare(['delegation'])).not.toThrow();
  });

  it('refuses a script with no file, and a key declared twice', () => {
    expect(() => defineScript({ name: 'noSuchVerb', keys: ['a'], encode: () => [], decode: integerReply })).toThrow(/no lua\/noSuchVerb-<key count>\.lua/);
    expect(() => defineScript({ name: 'takeFollow', keys: ['delegation', 'delegation'], encode: () => [], decode: integerReply })).toThrow(/declared twice/);
  });

  it('a composed script takes the key count of its second part', () => {
    expect(applyArtifactThenStatusScript.keys).toHaveLength(5);
    expect(() => defineScript({ name: 'applyArtifactThenStatus', keys: ['delegation', 'artifacts'], encode: () => [], decode: integerReply })).toThrow(/applyStatus-5\.lua takes 5/);
  });

  it('decodes integer replies into named outcomes and refusals by name', () => {
    const decode = outcomeDecoder({ 1: 'created', 0: 'exists' });
    expect(decode(1, 'createIntent')).toBe('created');
    expect(decode(0, 'createIntent')).toBe('exists');
    expect(decode(SCRIPT_CODES.VERSION_CONFLICT, 'createIntent')).toEqual({ refused: 'VERSION_CONFLICT', detail: '' });
    expect(() => decode(2, 'createIntent')).toThrow(ScriptReplyError);
    expect(() => decode('1', 'createIntent')).toThrow(ScriptReplyError);
    expect(() => decode(-99, 'createIntent')).toThrow(/unknown journal script code -99/);
    expect(fenceDecoder(7, 'claim')).toEqual({ fence: 7 });
    expect(fenceDecoder(-1, 'claim')).toEqual({ refused: 'DELEGATION_MISSING', detail: '' });
  });

  it("decodes applyStatus's replies: applied with the row, flags and the handed-over fence; ignored; refused with its detail", () => {
    const applied = applyStatusScript.decode([1, 4, ['state', 'WORKING', 'delegationId', 'main.1'], ['RUNNING', '1', ''], [], 3, 1], 'applyStatus');
    expect(applied).toEqual({ applied: true, version: 4, row: { state: 'WORKING', delegationId: 'main.1' }, whole: true, flags: ['RUNNING', '1', ''], followFence: 3 });
    const finished = applyStatusScript.decode([1, 5, ['state', 'COMPLETED'], [], [['workflowId', 'w'], ['main.1']], 0, 0], 'applyStatus');
    expect(finished).toEqual({ applied: true, version: 5, row: { state: 'COMPLETED' }, whole: false, finished: { workflow: { workflowId: 'w' }, delegationIds: ['main.1'] } });
    expect(() => applyStatusScript.decode([1, 5, [], [], []], 'applyStatus')).toThrow(ScriptReplyError);
    expect(applyStatusScript.decode([0, 'stale'], 'applyStatus')).toEqual({ applied: false, reason: 'stale' });
    expect(applyStatusScript.decode([SCRIPT_CODES.TASK_BOUND_ELSEWHERE, 'w|main.1'], 'applyStatus')).toEqual({ refused: 'TASK_BOUND_ELSEWHERE', detail: 'w|main.1' });
    expect(applyStatusScript.decode([SCRIPT_CODES.TASK_NOT_BOUND, 'https://agent/card'], 'applyStatus')).toEqual({ refused: 'TASK_NOT_BOUND', detail: 'https://agent/card' });
    expect(() => applyStatusScript.decode([0, 'whatever'], 'applyStatus')).toThrow(ScriptReplyError);
    expect(() => applyStatusScript.decode(1, 'applyStatus')).toThrow(ScriptReplyError);
  });

  it('the composed script decodes both parts, and the first alone when it refused', () => {
    expect(applyArtifactThenStatusScript.decode([[1, 'applied'], [0, 'duplicate']], 'applyArtifactThenStatus')).toEqual({
      artifact: 'applied',
      status: { applied: false, reason: 'duplicate' },
    });
    expect(applyArtifactThenStatusScript.decode([[SCRIPT_CODES.ARTIFACT_LIMIT, 'limit']], 'applyArtifactThenStatus')).toEqual({ artifact: { refused: 'ARTIFACT_LIMIT', detail: 'limit' } });
  });
});

describe('script codes and state sets: one table, included by every script', () => {
  it('each code has one name and each name one code', () => {
    const codes = Object.values(SCRIPT_CODES);
    expect(new Set(codes).size).toBe(codes.length);
    for (const [name, code] of Object.entries(SCRIPT_CODES)) {
      expect(code).toBeLessThan(0);
      expect(scriptCodeName(code, 'test')).toBe(name);
    }
  });

  it('the prelude is the TypeScript tables, and every state has a rank', () => {
    const prelude = luaPrelude();
    for (const [name, code] of Object.entries(SCRIPT_CODES)) expect(prelude).toContain(`${name} = ${code}`);
    expect(prelude).toContain(`local FINISHED = { ${[...FINISHED_STATES].map((state) => `${state} = true`).join(', ')} }`);
    expect(prelude).toContain(`local PARKED = { ${[...PARKED_STATES].map((state) => `${state} = true`).join(', ')} }`);
    expect(prelude).toContain(`local FINISHED_WORKFLOW = { ${[...FINISHED_WORKFLOW_STATES].map((state) => `${state} = true`).join(', ')} }`);
    for (const state of JOURNAL_STATES) expect(prelude).toContain(`${state} = ${JOURNAL_STATE_RANK[state]}`);
  });

  it('every script returns its refusals by name from the table: no negative literal, no unknown name', () => {
    const names = scriptNames();
    expect(names).toContain('applyStatus');
    for (const name of names) {
      const text = scriptText(name);
      const literals = [...text.matchAll(/return\s*\{?\s*(-\d+)/g)].map((match) => Number(match[1]));
      const kept = KEPT_AS_FILE[name];
      if (kept) {
        for (const literal of literals) expect(Object.values(kept), `${name} returns ${literal}`).toContain(literal);
        for (const [code, value] of Object.entries(kept)) expect(SCRIPT_CODES[code as keyof typeof SCRIPT_CODES]).toBe(value);
      } else expect(literals, `${name} returns a negative literal`).toEqual([]);
      for (const [, code] of text.matchAll(/\bCODE\.([A-Z_]+)/g)) expect(Object.keys(SCRIPT_CODES), `${name} uses CODE.${code}`).toContain(code);
      if (/\bCODE\./.test(text)) expect(text, `${name} uses CODE without the prelude`).toContain('local CODE = {');
    }
  });

  it('no Lua file keeps its own copy of a state set', () => {
    const files = [...readdirSync(LUA).filter((file) => file.endsWith('.lua')), ...readdirSync(new URL('includes/', LUA)).map((file) => `includes/${file}`)];
    expect(files.length).toBeGreaterThan(18);
    for (const file of files) {
      const text = readFileSync(new URL(file, LUA), 'utf8');
      expect(text, file).not.toMatch(/\b(COMPLETED|INPUT_REQUIRED|COMPENSATED)\s*=\s*(true|\d)/);
    }
  });
});
