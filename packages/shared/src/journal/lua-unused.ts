/**
 * A script's text without the top-level `local function`s nothing else in it calls. An EVAL script keeps nothing
 * between calls: every `local function` at its top is a closure made anew on every call (about 450 instructions of
 * redis-server, more with upvalues; bench/script-ir.ts), and an include brings all of its functions to every script
 * that includes it (finishStep-5.lua used 6 of compaction.lua's 14). Applied at load (scripts.ts), so the digest is
 * that of the text Redis runs.
 *
 * Conservative by construction: a function stays when its name appears anywhere outside its own definition but in a
 * whole-line `--` comment or a block comment that opened its line (a trailing comment, a string or a local of the same
 * name keep it too), and a definition is taken out only in the shapes the journal's Lua uses: one line ending with
 * `end` (not followed by an indented line), or a first line not ending with `end` followed by indented lines (or empty
 * ones) up to a line that is just `end`, both of them code outside any block comment or long string (`lineKinds`).
 * Anything else stays as written.
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

/**
 * The definitions that may be taken out: a first line and a closing line that are code (`lineKinds`), so every block
 * comment or long string between them opens and closes inside (taking the lines out leaves none open over the code
 * after, and takes no line out of a string).
 */
function definitions(lines: readonly string[], kinds: readonly LineKind[]): Definition[] {
  const found: Definition[] = [];
  for (let index = 0; index < lines.length; index++) {
    const name = kinds[index] === 'code' ? DEFINITION.exec(lines[index]!)?.[1] : undefined;
    if (!name) continue;
    const last = lastLine(lines, index);
    if (last === undefined || kinds[last] !== 'code') continue;
    found.push({ name, first: index, last });
    index = last;
  }
  return found;
}

/** A long bracket's opening (`[[`, `[=[`, …: a long string's, or a block comment's after `--`); its level is its `=`s. */
const LONG_OPEN = /\[(=*)\[/;
/** A block comment opening its line (`--[[`, `--[=[`, …). */
const BLOCK_OPEN = /^--\[(=*)\[/;

/**
 * What a line is. `code`: no comment or long bracket in it but maybe a trailing `--` comment. `comment`: a whole-line
 * `--` comment, outside any block (the only lines taken out with a function, the comments above it). `block`: inside a
 * block comment that opened at the start of a line, its opening and closing lines included (`--[[`, `--]]`): its names
 * are no use. `mixed`: anything else a long bracket touches: code and a block on one line, or a line after a long
 * bracket opened mid-line (a long string, a comment after code, or mere text in a string: a line reader cannot tell),
 * up to its close. A `mixed` line's names count, and it is never taken out.
 */
type LineKind = 'code' | 'comment' | 'block' | 'mixed';

/** Each line's kind (`LineKind`), reading the text's long brackets in order (each closes at its first closing bracket of the same level). */
function lineKinds(lines: readonly string[]): LineKind[] {
  // The closing bracket of the span still open ('' = none), and whether it is a block comment that opened its line.
  let close = '';
  let block = false;
  return lines.map((line): LineKind => {
    let rest: string;
    let kind: LineKind = 'mixed';
    if (close !== '') {
      const at = line.indexOf(close);
      if (at < 0) return block ? 'block' : 'mixed';
      rest = line.slice(at + close.length);
      close = '';
      if (block && rest.trim() === '') return 'block';
    } else {
      const trimmed = line.trimStart();
      const opened = BLOCK_OPEN.exec(trimmed);
      if (opened) {
        const level = `]${opened[1]}]`;
        const body = trimmed.slice(opened[0].length);
        const at = body.indexOf(level);
        if (at < 0) {
          close = level;
          block = true;
          return 'block';
        }
        rest = body.slice(at + level.length);
        if (rest.trim() === '') return 'block';
      } else if (trimmed.startsWith('--')) {
        return 'comment';
      } else {
        rest = line;
        kind = 'code';
      }
    }
    // The rest of the line: every long bracket it opens is followed to its close, on this line or a later one.
    for (let open = LONG_OPEN.exec(rest); open; open = LONG_OPEN.exec(rest)) {
      kind = 'mixed';
      const level = `]${open[1]}]`;
      const after = rest.slice(open.index + open[0].length);
      const at = after.indexOf(level);
      if (at < 0) {
        close = level;
        block = false;
        break;
      }
      rest = after.slice(at + level.length);
    }
    return kind;
  });
}

/**
 * `text` without its unused top-level local functions (repeated until none is left: taking one out may leave those
 * only it called unused), and the whole-line `--` comments just above each (they describe it; a line that closes a
 * block comment, such as `--]]`, is the block's and stays).
 */
export function withoutUnusedFunctions(text: string): string {
  let lines = text.split('\n');
  // Each round takes out at least one definition, so there are at most as many rounds as lines.
  const rounds = lines.length;
  for (let round = 0; round < rounds; round++) {
    const kinds = lineKinds(lines);
    const unused = definitions(lines, kinds).filter(({ name, first, last }) => {
      const word = new RegExp(`\\b${name}\\b`);
      return !lines.some((line, index) => (index < first || index > last) && (kinds[index] === 'code' || kinds[index] === 'mixed') && word.test(line));
    });
    if (unused.length === 0) break;
    const dropped = new Set<number>();
    for (const { first, last } of unused) {
      for (let index = first; index <= last; index++) dropped.add(index);
      for (let index = first - 1; index >= 0 && kinds[index] === 'comment' && lines[index]!.startsWith('--'); index--) dropped.add(index);
    }
    lines = lines.filter((_, index) => !dropped.has(index));
  }
  return lines.join('\n');
}
