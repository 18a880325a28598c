/**
 * journal/lua-unused.ts: a script's unused top-level functions are taken out at load (each would be a closure made on
 * every call), and nothing a script calls ever is.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withoutUnusedFunctions } from '../src/journal/lua-unused.ts';
import { scriptNames, scriptText } from '../src/journal/scripts.ts';

const definedNames = (text: string) => [...text.matchAll(/^local function ([A-Za-z_][A-Za-z0-9_]*)/gm)].map((match) => match[1]!);

/** The functions the main code reaches (`main`: those it calls; `calls[i]`: those function i calls). */
function reachedFrom(main: readonly number[], calls: readonly (readonly number[])[]): Set<number> {
  const reached = new Set<number>();
  const visit = (index: number) => {
    if (reached.has(index)) return;
    reached.add(index);
    for (const callee of calls[index]!) visit(callee);
  };
  main.forEach(visit);
  return reached;
}

/** Lua's own functions a script may call without declaring them. */
const LUA_GLOBALS = new Set(['tonumber', 'tostring', 'unpack', 'type', 'ipairs', 'pairs', 'pcall', 'error', 'next', 'select', 'assert', 'setmetatable', 'getmetatable', 'rawget', 'rawset']);
/** Words a `(` may follow that call nothing. */
const KEYWORDS = new Set(['if', 'while', 'and', 'or', 'not', 'return', 'elseif', 'until', 'in', 'function']);

/**
 * The names `text` calls (`name(`, not a field's `.name(` or `:name(`) that nothing in it declares: no `local function`,
 * no `local` (of any scope: an over-approximation), no parameter, no loop variable, no Lua global. Comments and
 * short strings are left out first.
 */
function undeclaredCalls(text: string): string[] {
  const code = text
    .replace(/--\[(=*)\[[\s\S]*?\]\1\]/g, '')
    .replace(/--[^\n]*/g, '')
    .replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"/g, "''");
  const declared = new Set<string>(LUA_GLOBALS);
  const add = (names: string) => names.split(',').forEach((name) => declared.add(name.trim()));
  for (const match of code.matchAll(/\blocal\s+function\s+([A-Za-z_]\w*)/g)) declared.add(match[1]!);
  for (const match of code.matchAll(/\blocal\s+([A-Za-z_][\w\s,]*?)(?:=|\n|$)/g)) add(match[1]!);
  for (const match of code.matchAll(/function\s*[\w.:]*\s*\(([^)]*)\)/g)) add(match[1]!);
  for (const match of code.matchAll(/\bfor\s+([\w\s,]+?)\s+(?:=|in)\b/g)) add(match[1]!);
  const called = [...code.matchAll(/(?<![.:\w])([A-Za-z_]\w*)\s*\(/g)].map((match) => match[1]!);
  return [...new Set(called.filter((name) => !declared.has(name) && !KEYWORDS.has(name)))];
}

describe('withoutUnusedFunctions', () => {
  it('takes out unused functions, one line or several, with the comment above, and what only they called', () => {
    const text = [
      '-- helper: only `unusedCaller` calls it',
      'local function helper(x) return x + 1 end',
      '-- unusedCaller: nobody calls it',
      '-- (two comment lines)',
      'local function unusedCaller(x)',
      '  local y = helper(x)',
      '',
      '  return unusedCaller(y)',
      'end',
      'local function used(x) return x end',
      '--[[ a block naming helper and unusedCaller ]]',
      'return used(ARGV[1])',
    ].join('\n');
    expect(withoutUnusedFunctions(text)).toBe(['local function used(x) return x end', '--[[ a block naming helper and unusedCaller ]]', 'return used(ARGV[1])'].join('\n'));
  });

  it('keeps a function named by code anywhere: a trailing comment, a string, a later function, after a block comment closes', () => {
    const text = [
      'local function inTrailing() end',
      'local function inString() end',
      'local function inLater()',
      '  return 1',
      'end',
      'local function later() return inLater() end',
      'local function afterBlock() end',
      'local function afterLongBlock() end',
      "local x = 1 -- inTrailing",
      "redis.call('GET', 'inString')",
      '--[[ a block ]] afterBlock()',
      '--[[ a block',
      'of two lines ]] afterLongBlock()',
      'return later()',
    ].join('\n');
    expect(withoutUnusedFunctions(text)).toBe(text);
  });

  it('leaves a definition whose shape it does not take out as written, used or not', () => {
    const ambiguous = ['local function opens(x) if x then return end', '  x = 1', 'end', 'return 1'].join('\n');
    expect(withoutUnusedFunctions(ambiguous)).toBe(ambiguous);
    const unclosed = ['local function f(x)', '  return x', 'return 1'].join('\n');
    expect(withoutUnusedFunctions(unclosed)).toBe(unclosed);
    const interrupted = ['local function f(x)', '  local y = x', 'local z = 2', 'end', 'return 1'].join('\n');
    expect(withoutUnusedFunctions(interrupted)).toBe(interrupted);
  });

  it('never takes the closing line of a block comment above an unused function (`--]]`), so no code is swallowed', () => {
    const text = [
      '--[[',
      '  a header block, closed the usual way',
      '--]]',
      'local function unused() return 1 end',
      'local function used(x) return x end',
      'local t = { { 1 } }',
      'if t[t[1][1]] then return 0 end',
      'return used(ARGV[1])',
    ].join('\n');
    expect(withoutUnusedFunctions(text)).toBe(text.replace('local function unused() return 1 end\n', ''));
  });

  it('keeps exactly the functions the main code reaches, for any call graph (property)', () => {
    const graph = fc.integer({ min: 1, max: 8 }).chain((count) =>
      fc.record({
        count: fc.constant(count),
        // As Lua's scoping allows a local function: calls of itself and of those defined before it.
        calls: fc.tuple(...Array.from({ length: count }, (_, index) => fc.subarray(Array.from({ length: index + 1 }, (_, callee) => callee)))),
        main: fc.subarray(Array.from({ length: count }, (_, index) => index)),
        oneLine: fc.array(fc.boolean(), { minLength: count, maxLength: count }),
      }),
    );
    fc.assert(
      fc.property(graph, ({ count, calls, main, oneLine }) => {
        const name = (index: number) => `fn${index}x`;
        const body = (index: number) => calls[index]!.map((callee) => `${name(callee)}()`).join(' + ') || '0';
        const lines = Array.from({ length: count }, (_, index) =>
          oneLine[index] ? [`-- ${name(index)}`, `local function ${name(index)}() return ${body(index)} end`] : [`local function ${name(index)}()`, `  return ${body(index)}`, 'end'],
        ).flat();
        lines.push(`return ${main.map((index) => `${name(index)}()`).join(' + ') || '0'}`);
        const reached = reachedFrom(main, calls);
        const kept = definedNames(withoutUnusedFunctions(lines.join('\n')));
        expect(kept).toEqual(Array.from({ length: count }, (_, index) => index).filter((index) => reached.has(index)).map(name));
      }),
    );
  });
  it('takes out only unused definitions and their line comments, whatever block comments and long strings lie around them (property)', () => {
    // What may stand just above a function: nothing, line comments (its doc: taken out with it), or a span that is not
    // its doc and stays whole: a block comment closed by `]]` or `--]]`, a level-1 block, a one-line block, or a long
    // string holding what looks like a comment and a definition (a string's text: never taken out).
    const before = fc.constantFrom(
      [],
      ['-- doc'],
      ['-- doc', '-- more doc'],
      ['--[[', 'a block', ']]'],
      ['--[[', '  a block closed the usual way', '--]]'],
      ['--[=[', 'a level-1 block ]]', '--]=]'],
      ['--[[ one line ]]'],
      ['local text = [[', '-- not a comment', 'local function inString() return 1 end', ']]'],
      ['local after = 1 --[[ a block after code', '-- inside it', ']]'],
    );
    const graph = fc.integer({ min: 1, max: 6 }).chain((count) =>
      fc.record({
        calls: fc.tuple(...Array.from({ length: count }, (_, index) => fc.subarray(Array.from({ length: index + 1 }, (_, callee) => callee)))),
        main: fc.subarray(Array.from({ length: count }, (_, index) => index)),
        oneLine: fc.array(fc.boolean(), { minLength: count, maxLength: count }),
        above: fc.array(before, { minLength: count, maxLength: count }),
      }),
    );
    fc.assert(
      fc.property(graph, ({ calls, main, oneLine, above }) => {
        const name = (index: number) => `fn${index}x`;
        const body = (index: number) => calls[index]!.map((callee) => `${name(callee)}()`).join(' + ') || '0';
        // Each line with the function whose taking out takes it too (undefined: stays whatever happens).
        const lines: { text: string; of?: number }[] = [];
        above.forEach((span, index) => {
          const doc = span.every((line) => line.startsWith('-- '));
          lines.push(...span.map((text) => (doc ? { text, of: index } : { text })));
          const definition = oneLine[index] ? [`local function ${name(index)}() return ${body(index)} end`] : [`local function ${name(index)}()`, `  return ${body(index)}`, 'end'];
          lines.push(...definition.map((text) => ({ text, of: index })));
        });
        lines.push({ text: `return ${main.map((index) => `${name(index)}()`).join(' + ') || '0'}` });
        const reached = reachedFrom(main, calls);
        const expected = lines.filter(({ of }) => of === undefined || reached.has(of)).map(({ text }) => text);
        expect(withoutUnusedFunctions(lines.map(({ text }) => text).join('\n'))).toBe(expected.join('\n'));
      }),
      { numRuns: 300 },
    );
  });
});

describe("the journal scripts' texts", () => {
  it('call no function they do not declare: nothing called was taken out', () => {
    // The check itself: a call of a function taken out is found.
    expect(undeclaredCalls(['local function kept(x) return x end', "local s = 'gone()' -- gone()", 'return kept(1) + gone(2)'].join('\n'))).toEqual(['gone']);
    for (const script of scriptNames()) expect(undeclaredCalls(scriptText(script)), script).toEqual([]);
  });

  it('keep no top-level function their code never names (each is named outside its own definition)', () => {
    for (const script of scriptNames()) {
      const text = scriptText(script);
      const code = text
        .replace(/--\[\[[\s\S]*?\]\]/g, '')
        .split('\n')
        .filter((line) => !line.trimStart().startsWith('--'))
        .join('\n');
      for (const name of new Set(definedNames(text))) {
        const uses = code.match(new RegExp(`\\b${name}\\b`, 'g'))?.length ?? 0;
        expect(uses, `${script}: ${name} defined but never named`).toBeGreaterThan(1);
      }
    }
  });

  it('finishStep no longer makes the compaction helpers it never calls', () => {
    const names = definedNames(scriptText('finishStep'));
    expect(names).toEqual(expect.arrayContaining(['assemble', 'storeCompacted', 'withArtifacts']));
    for (const unused of ['compact', 'encodeFields', 'slimDelegation', 'checkPrebuilt', 'finishWorkflowKeys']) expect(names).not.toContain(unused);
    expect(definedNames(scriptText('updateWorkflow'))).toEqual(expect.arrayContaining(['compact', 'encodeFields', 'finishWorkflowKeys']));
  });
});
