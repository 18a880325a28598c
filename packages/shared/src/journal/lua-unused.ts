/**
 * A script's text without the top-level `local function`s nothing else in it calls. An EVAL script keeps nothing
 * between calls: every `local function` at its top is a closure made anew on every call (about 450 instructions of
 * redis-server, more with upvalues; bench/script-ir.ts), and an include brings all of its functions to every script
 * that includes it (finishStep-5.lua used 6 of compaction.lua's 14). Applied at load (scripts.ts), so the digest is
 * that of the text Redis runs.
 *
 * Conservative by construction: a function stays when its name appears anywhere outside its own definition but in a
 * whole-line comment (a trailing comment, a string or a local of the same name keep it too), and a definition is
 * taken out only in the shapes the journal's Lua uses: one line ending with `end` (not followed by an indented line), or
 * a first line not ending with `end` followed by indented lines (or empty ones) up to a line that is just `end`. Anything else stays as written.
 */

const DEFINITION = /^local function ([A-Za-z_][A-Za-z0-9_]*)\s*\(/;

/** A top-level definition: its name and its first and last line (indexes into the text's lines). */
interface Definition {
  name: string;
  first: number;
  last: number;
}

/** The line of the definition's closing `end`, or undefined when the shape is not one of the two taken out. */
function lastLine(lines: readonly string[], first: number): number | undefined {
  const indentedNext = /^\s/.test(lines[first + 1] ?? '');
  // One line (an indented line after it would make it ambiguous: `… then return end` opening a body).
  if (/\bend\s*$/.test(lines[first]!)) return indentedNext ? undefined : first;
  if (!indentedNext) return undefined;
  for (let index = first + 1; index < lines.length; index++) {
    const body = lines[index]!;
    if (body === 'end') return index;
    if (body !== '' && !/^\s/.test(body)) return undefined;
  }
  return undefined;
}

function definitions(lines: readonly string[]): Definition[] {
  const found: Definition[] = [];
  for (let index = 0; index < lines.length; index++) {
    const name = DEFINITION.exec(lines[index]!)?.[1];
    if (!name) continue;
    const last = lastLine(lines, index);
    if (last === undefined) continue;
    found.push({ name, first: index, last });
    index = last;
  }
  return found;
}

/** Whether anything follows the first `]]` of `text` (code after a block comment closes: counted as code). */
const textAfterClose = (text: string) => text.slice(text.indexOf(']]') + 2).trim() !== '';

/**
 * Whether each line may hold code: not inside a `--[[ … ]]` block, not a whole-line `--` comment. A line where a
 * block closes with anything after it counts as code.
 */
function codeLines(lines: readonly string[]): boolean[] {
  let inBlock = false;
  return lines.map((line) => {
    const trimmed = line.trimStart();
    if (inBlock) {
      if (!line.includes(']]')) return false;
      inBlock = false;
      return textAfterClose(line);
    }
    if (trimmed.startsWith('--[[')) {
      const rest = trimmed.slice(4);
      inBlock = !rest.includes(']]');
      return !inBlock && textAfterClose(rest);
    }
    return !trimmed.startsWith('--');
  });
}

/**
 * `text` without its unused top-level local functions (repeated until none is left: taking one out may leave those
 * only it called unused), and the whole-line comments just above each (they describe it).
 */
export function withoutUnusedFunctions(text: string): string {
  let lines = text.split('\n');
  // Each round takes out at least one definition, so there are at most as many rounds as lines.
  const rounds = lines.length;
  for (let round = 0; round < rounds; round++) {
    const code = codeLines(lines);
    const unused = definitions(lines).filter(({ name, first, last }) => {
      const word = new RegExp(`\\b${name}\\b`);
      return !lines.some((line, index) => (index < first || index > last) && code[index] && word.test(line));
    });
    if (unused.length === 0) break;
    const dropped = new Set<number>();
    for (const { first, last } of unused) {
      for (let index = first; index <= last; index++) dropped.add(index);
      for (let index = first - 1; index >= 0 && /^--(?!\[\[)/.test(lines[index]!) && !code[index]; index--) dropped.add(index);
    }
    lines = lines.filter((_, index) => !dropped.has(index));
  }
  return lines.join('\n');
}
