/**
 * Comments state the rule and its reason in the repository's own words, never a tracker number: an issue cited by
 * its number means nothing to a reader without that tracker, while a docs page or a field case id (R23, G31: docs/field-cases.md)
 * resolves inside the repository. Every source file under packages/<name>/src and /test, test/, bench/, demo/,
 * examples/ and scripts/ (TypeScript, JavaScript and Lua) is read; a line that cites an issue by number fails the
 * test with its file and line. References to another project's tracker (`bullmq#457`) name that project and stay.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const FOLDERS = ['test', 'bench', 'demo', 'examples', 'scripts'];
const SOURCE = /\.(ts|mts|cts|tsx|js|mjs|cjs|lua)$/;
const SKIPPED = new Set(['node_modules', 'dist', '.turbo']);
// "issue" or "issues", then a number (with or without #): the tracker's own numbering.
const TRACKER_NUMBER = new RegExp(String.raw`\bissues?\s+#?\d`, 'i');

/** Every source file below `folder` (relative to the root), skipping dependencies and build output. */
function sourceFiles(folder: string): string[] {
  const absolute = join(root, folder);
  if (!statSync(absolute, { throwIfNoEntry: false })?.isDirectory()) return [];
  return readdirSync(absolute, { recursive: true, encoding: 'utf8' })
    .filter((name) => SOURCE.test(name) && !name.split(/[\\/]/).some((part) => SKIPPED.has(part)))
    .map((name) => join(absolute, name));
}

/** `file:line: text` for each line of `text` that cites a tracker number. */
function trackerCitations(file: string, text: string): string[] {
  return text.split('\n').flatMap((line, index) => (TRACKER_NUMBER.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : []));
}

describe('comments without tracker numbers', () => {
  it('the matcher finds issue numbers and leaves case ids, docs pages and other projects alone', () => {
    // Written with a placeholder for the number, so that this file does not cite one itself.
    const cited = ['// (issue <n>, kind 3)', ' * Issues <n> and 32: the page', '-- see ISSUE #<n>', "it('per issue  <n>')"].map((line) => line.replace('<n>', '16'));
    const fine = ['// field case R23', ' * docs/people.md "History"', '// bullmq#457', '// an issue with 3 parts', "const tissue = 'issued 5'"];
    expect(cited.map((line) => trackerCitations('x', line).length)).toEqual(cited.map(() => 1));
    expect(fine.flatMap((line) => trackerCitations('x', line))).toEqual([]);
  });

  it('no source file of packages, test, bench, demo, examples or scripts cites an issue by number', () => {
    const packages = readdirSync(join(root, 'packages')).flatMap((name) => [`packages/${name}/src`, `packages/${name}/test`]);
    const files = [...packages, ...FOLDERS].flatMap(sourceFiles);
    expect(files.length).toBeGreaterThan(100); // the walk reached the sources
    const citations = files.flatMap((file) => trackerCitations(relative(root, file), readFileSync(file, 'utf8')));
    expect(citations).toEqual([]);
  });
});
