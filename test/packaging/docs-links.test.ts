/**
 * The documentation's relative links resolve (README.md, docs/**, bench/README.md, packages/*\/README.md): each
 * names a file of the repository, and each #anchor into a Markdown page one of its headings as GitHub slugs them
 * (harness/markdown-links.ts). And the README stays a page a newcomer reads: at most 15 KiB. A package's README is
 * also its page on npm and in the tarball: its relative links stay inside the files the package publishes, and the
 * tarball names it gives (`dist-packages/durable-a2a-<name>-<version>.tgz`) are those `pnpm pack:all` writes.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { checkLinks, checkPathSpans, diskSource, linkUrls, type PageSource } from '../harness/markdown-links.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const README_LIMIT_BYTES = 15 * 1024;

function markdownUnder(folder: string): string[] {
  return readdirSync(new URL(`../../${folder}`, import.meta.url), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => `${folder}/${name.split('\\').join('/')}`);
}

const packageReadmes = readdirSync(new URL('../../packages', import.meta.url))
  .map((name) => `packages/${name}/README.md`)
  .filter((path) => statSync(new URL(`../../${path}`, import.meta.url), { throwIfNoEntry: false })?.isFile());
// bench/results.md is the log every run appends to (it names files as they were on the day): not a page.
const PAGES = ['README.md', ...markdownUnder('docs'), ...markdownUnder('bench').filter((page) => page !== 'bench/results.md'), ...packageReadmes];

const memory = (files: Record<string, string>): PageSource => ({
  exists: (path) => path in files || Object.keys(files).some((name) => name.startsWith(`${path}/`)),
  read: (path) => files[path]!,
});

it('every relative link and anchor of the documentation resolves', () => {
  const report = checkLinks(PAGES, diskSource(root));
  expect(report.broken).toEqual([]);
  // The pages link to each other and into the code: a check that found next to nothing checked nothing.
  expect(PAGES.length).toBeGreaterThanOrEqual(20);
  expect(report.relativeLinks).toBeGreaterThan(150);
  expect(report.anchors).toBeGreaterThan(30);
});

it('every repository file a page names in a code span exists (a moved file leaves no stale name behind)', () => {
  const report = checkPathSpans(PAGES, diskSource(root));
  expect(report.missing).toEqual([]);
  expect(report.checked).toBeGreaterThan(100);
});

it('a code span naming a missing repository file is reported; other code spans are not paths', () => {
  const files = {
    'README.md': '`test/api/cli.test.ts` `test/gone.test.ts` `pnpm test` `packages/*/src/*.ts` `test/<subject>/x.test.ts`\n',
    'test/api/cli.test.ts': '',
    'packages/a/README.md': '`examples/run.mjs` `packages/a/examples/run.mjs` `examples/none.mjs`\n',
    'packages/a/examples/run.mjs': '',
  };
  expect(checkPathSpans(['README.md', 'packages/a/README.md'], memory(files))).toEqual({
    checked: 5,
    missing: [
      { page: 'README.md', path: 'test/gone.test.ts' },
      { page: 'packages/a/README.md', path: 'examples/none.mjs' },
    ],
  });
});

it('README.md is at most 15 KiB', () => {
  expect(statSync(new URL('../../README.md', import.meta.url)).size).toBeLessThanOrEqual(README_LIMIT_BYTES);
});

it('reports a missing file, a missing anchor and a path above the root; code and remote links are not links', () => {
  const files = {
    'README.md': [
      '# Title', '[ok](docs/a.md#a-heading) [same page](#title) [folder](docs) [site](https://example.com/x.md)',
      '[gone](docs/b.md) [wrong anchor](docs/a.md#nope) [above](../x.md) `[in code](nowhere.md)`',
      '```', '[in a block](nowhere.md)', '```',
    ].join('\n'),
    'docs/a.md': '# A heading\n[back](../README.md#title) [line](../src/x.ts#L10)\n',
    'src/x.ts': '',
  };
  const report = checkLinks(['README.md', 'docs/a.md'], memory(files));
  expect(report.broken).toEqual([
    { page: 'README.md', url: 'docs/b.md', reason: 'no such file' },
    { page: 'README.md', url: 'docs/a.md#nope', reason: 'no such anchor' },
    { page: 'README.md', url: '../x.md', reason: 'outside the repository' },
  ]);
  expect(report.relativeLinks).toBe(8);
});

it('a link to any heading by its GitHub slug resolves, a repeated heading by its -1 suffix', () => {
  // No backticks here: a code span drops one leading and one trailing space (CommonMark), so "a` ( `0" slugs to
  // "a-0" on GitHub and here alike, not to what the simple oracle below computes; code spans are an example below.
  const word = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 ()'.,:-]{0,30}[A-Za-z0-9]$/);
  fc.assert(
    fc.property(word, (heading) => {
      const slug = heading.toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-');
      const files = { 'a.md': `# ${heading}\n\n## ${heading}\n\n[first](#${slug}) [second](#${slug}-1) [third](#${slug}-2)\n` };
      const report = checkLinks(['a.md'], memory(files));
      expect(report.broken).toEqual([{ page: 'a.md', url: `#${slug}-2`, reason: 'no such anchor' }]);
    }),
    { numRuns: 200 },
  );
  const codeHeading = { 'a.md': '# The ` lua/ ` folder\n\n[ok](#the-lua-folder) [spaces kept](#the--lua--folder)\n' };
  expect(checkLinks(['a.md'], memory(codeHeading)).broken).toEqual([{ page: 'a.md', url: '#the--lua--folder', reason: 'no such anchor' }]);
});

/** `packages/<name>/package.json`, as read from disk. */
const manifestOf = (name: string) => JSON.parse(readFileSync(new URL(`../../packages/${name}/package.json`, import.meta.url), 'utf8')) as { name: string; version: string; files: string[] };

it('a package README links only to files its tarball holds (elsewhere: the repository by its URL)', () => {
  const leaving: { page: string; url: string }[] = [];
  for (const page of packageReadmes) {
    const folder = posix.dirname(page);
    const published = manifestOf(posix.basename(folder)).files;
    for (const url of linkUrls(readFileSync(new URL(`../../${page}`, import.meta.url), 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:|^\/\/|^#/i.test(url)) continue;
      const inside = posix.relative(folder, posix.normalize(posix.join(folder, url.split('#')[0]!)));
      if (inside.startsWith('..') || !published.some((entry) => inside === entry || inside.startsWith(`${entry}/`))) leaving.push({ page, url });
    }
  }
  expect(packageReadmes.length).toBeGreaterThanOrEqual(6);
  expect(leaving).toEqual([]);
});

it('every tarball a page names is one pnpm pack:all writes (package and version as in its package.json)', () => {
  const written = new Set(readdirSync(new URL('../../packages', import.meta.url)).filter((name) => statSync(new URL(`../../packages/${name}/package.json`, import.meta.url), { throwIfNoEntry: false })).map((name) => {
    const manifest = manifestOf(name);
    return `${manifest.name.replace('@', '').replace('/', '-')}-${manifest.version}.tgz`;
  }));
  const named = PAGES.flatMap((page) => [...readFileSync(new URL(`../../${page}`, import.meta.url), 'utf8').matchAll(/dist-packages\/(durable-a2a-[a-z0-9-]+-\d[^\s`)]*\.tgz)/g)].map((match) => ({ page, tarball: match[1]! })));
  expect(named.length).toBeGreaterThan(5);
  expect(named.filter(({ tarball }) => !written.has(tarball))).toEqual([]);
});
