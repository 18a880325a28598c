/**
 * applyStatus-5.lua's ARGV layout (question36 named the positions after the 15 every call sends): the script's `AT_*`
 * locals and status-scripts.ts `APPLY_STATUS_ARGV` hold the same numbers, and the script reads no position from 16 on
 * by a number of its own (a branch that shifts the layout then moves every caller and the script together).
 */
import { describe, expect, it } from 'vitest';
import { APPLY_STATUS_ARGV, STATUS_ARGUMENTS_ALWAYS } from '../../src/journal/status-scripts.ts';
import { scriptText } from '../../src/journal/scripts.ts';

/** `AT_STATUS_MESSAGE` → `statusMessage`. */
const camel = (name: string) => name.slice(3).toLowerCase().replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());

/** The `AT_*` locals of `lua` (`local AT_A, AT_B = 16, 17`), by their camel-case names. */
function positionsOf(lua: string): Record<string, number> {
  const positions: Record<string, number> = {};
  for (const match of lua.matchAll(/^\s*local ((?:AT_[A-Z_]+,?\s*)+)=\s*([\d,\s]+)$/gm)) {
    const names = match[1]!.split(',').map((name) => name.trim()).filter(Boolean);
    const numbers = match[2]!.split(',').map((value) => Number(value.trim()));
    expect(names.length).toBe(numbers.length);
    names.forEach((name, index) => (positions[camel(name)] = numbers[index]!));
  }
  return positions;
}

describe('applyStatus-5.lua ARGV positions', () => {
  const lua = scriptText('applyStatus');
  it('the script names the same positions as APPLY_STATUS_ARGV', () => {
    expect(positionsOf(lua)).toEqual({ ...APPLY_STATUS_ARGV });
  });
  it('no code line reads an ARGV position from 16 on by a number', () => {
    const code = lua.replace(/--\[\[[\s\S]*?\]\]/g, '').split('\n').map((line) => line.replace(/--.*$/, ''));
    const literal = code.flatMap((line) => [...line.matchAll(/ARGV\[(\d+)\]/g)].map((match) => Number(match[1]))).filter((at) => at > STATUS_ARGUMENTS_ALWAYS);
    expect(literal).toEqual([]);
  });
});
