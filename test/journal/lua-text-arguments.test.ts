/**
 * The journal's scripts give `redis.call` no number written as a literal: Redis 7.0 turns a Lua number argument into
 * its string with snprintf("%.17g"), about 2,500 instructions each (a callgrind loop of LRANGE with `0, -1` against
 * `'0', '-1'`: 10.9 k against 6.4 k instructions a call), where a string literal costs nothing to convert
 * (docs/performance.md, branch redis37). A happy-path delegation passed four (the create's long member's score, the
 * finish's LRANGE bounds, the record's PX). Computed numbers on rare paths (a quota's range end, a clock's expiry)
 * stay numbers. No Redis: the scripts' text only.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const LUA_DIRECTORY = new URL('../../packages/shared/src/journal/lua/', import.meta.url);

/** Every journal script and include, as name → code without comments. */
function scripts(): Map<string, string> {
  const texts = new Map<string, string>();
  for (const folder of ['', 'includes/']) {
    for (const file of readdirSync(new URL(folder, LUA_DIRECTORY)).filter((name) => name.endsWith('.lua'))) {
      const text = readFileSync(new URL(`${folder}${file}`, LUA_DIRECTORY), 'utf8');
      texts.set(`${folder}${file}`, text.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--[^\n]*/g, ''));
    }
  }
  return texts;
}

/** The top-level arguments of each `redis.call(…)` / `redis.pcall(…)` in `code` (nested calls' own arguments left out). */
function callArguments(code: string): string[][] {
  const calls: string[][] = [];
  for (const match of code.matchAll(/redis\.p?call\(/g)) {
    const args: string[] = [];
    let depth = 0;
    let current = '';
    let quote: string | undefined;
    for (let index = match.index + match[0].length; index < code.length; index++) {
      const char = code[index]!;
      if (quote) {
        current += char;
        if (char === quote && code[index - 1] !== '\\') quote = undefined;
        continue;
      }
      if (char === "'" || char === '"') quote = char;
      else if (char === '(' || char === '{') depth += 1;
      else if ((char === ')' || char === '}') && depth > 0) depth -= 1;
      else if (char === ')' && depth === 0) {
        args.push(current.trim());
        break;
      } else if (char === ',' && depth === 0) {
        args.push(current.trim());
        current = '';
        continue;
      }
      current += char;
    }
    calls.push(args);
  }
  return calls;
}

describe('journal scripts: no number literal as a redis.call argument', () => {
  it('finds the arguments of a call, nested calls whole', () => {
    expect(callArguments("redis.call('LRANGE', key, 0, -1) redis.call('HSET', k, unpack(a, 1, math.min(2, #a)))")).toEqual([
      ["'LRANGE'", 'key', '0', '-1'],
      ["'HSET'", 'k', 'unpack(a, 1, math.min(2, #a))'],
    ]);
  });

  it('every script and include passes numbers as text', () => {
    const found: string[] = [];
    for (const [file, code] of scripts()) {
      for (const args of callArguments(code)) if (args.some((arg) => /^-?\d+(\.\d+)?$/.test(arg))) found.push(`${file}: redis.call(${args.join(', ')})`);
    }
    expect(found).toEqual([]);
  });

  it('fails on a literal (the check sees one)', () => {
    const args = callArguments("local ids = redis.call('LRANGE', listKey, 0, -1)")[0]!;
    expect(args.some((arg) => /^-?\d+(\.\d+)?$/.test(arg))).toBe(true);
  });
});
