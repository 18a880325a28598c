/**
 * Relative links of the repository's Markdown pages, checked the way GitHub renders them: the link's path must
 * name a file or folder of the repository (relative to the page, never above the root), and a `#anchor` into a
 * Markdown page must be one of that page's heading slugs (github-slugger: lowercased, punctuation dropped,
 * spaces to `-`, a repeated heading suffixed `-1`, `-2`, …) or an `id`/`name` of an HTML anchor in it. Anchors
 * into other files (a source file's `#L10`) are not checked: GitHub makes those from line numbers.
 * Links are read from the Markdown syntax tree (remark-parse with GFM), so code blocks and inline code never
 * count as links.
 */
import { existsSync, readFileSync } from 'node:fs';
import { posix, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import { toString } from 'mdast-util-to-string';
import remarkGfm from 'remark-gfm';
import remarkParse from 'remark-parse';
import { unified } from 'unified';
import { visit } from 'unist-util-visit';

/** One relative link that does not resolve: the page it is on (repository-relative), its URL and why. */
export interface BrokenLink {
  page: string;
  url: string;
  reason: 'no such file' | 'outside the repository' | 'no such anchor';
}

/** What a set of pages was checked for: the relative links seen, the anchors among them, and the broken ones. */
export interface LinkReport {
  relativeLinks: number;
  anchors: number;
  broken: BrokenLink[];
}

/** Reads a repository-relative file; a test passes an in-memory map, the real check the disk. */
export interface PageSource {
  exists(path: string): boolean;
  read(path: string): string;
}

const parser = unified().use(remarkParse).use(remarkGfm);
const SCHEME = /^[a-z][a-z0-9+.-]*:|^\/\//i;
const HTML_ANCHOR = /\b(?:id|name)\s*=\s*["']([^"']+)["']/g;

const LINK_NODES = new Set(['link', 'image', 'definition']);
const parse = (text: string) => parser.parse(text);

/** Every link, image and link definition URL of a page, in document order. */
export function linkUrls(text: string): string[] {
  const urls: string[] = [];
  visit(parse(text), (node) => {
    if (LINK_NODES.has(node.type)) urls.push((node as { url: string }).url);
  });
  return urls;
}

/** The anchors GitHub gives a page: its heading slugs in order (duplicates suffixed) and HTML `id`/`name`s. */
export function anchorsOf(text: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  visit(parse(text), (node) => {
    if (node.type === 'heading') anchors.add(slugger.slug(toString(node)));
    if (node.type === 'html') for (const match of (node as { value: string }).value.matchAll(HTML_ANCHOR)) anchors.add(match[1]!);
  });
  return anchors;
}

/** Checks the relative links of `pages` (repository-relative paths) against `source`. */
export function checkLinks(pages: readonly string[], source: PageSource): LinkReport {
  const anchorCache = new Map<string, Set<string>>();
  const anchorsFor = (path: string) => {
    let anchors = anchorCache.get(path);
    if (!anchors) anchorCache.set(path, (anchors = anchorsOf(source.read(path))));
    return anchors;
  };
  const report: LinkReport = { relativeLinks: 0, anchors: 0, broken: [] };
  for (const page of pages) {
    for (const url of linkUrls(source.read(page))) {
      if (SCHEME.test(url)) continue;
      report.relativeLinks += 1;
      const hash = url.indexOf('#');
      const pathPart = decodeURIComponent(hash === -1 ? url : url.slice(0, hash));
      const anchor = hash === -1 ? '' : decodeURIComponent(url.slice(hash + 1));
      const target = pathPart === '' ? page : posix.normalize(posix.join(posix.dirname(page), pathPart)).replace(/\/$/, '');
      if (target.startsWith('..')) {
        report.broken.push({ page, url, reason: 'outside the repository' });
      } else if (!source.exists(target)) {
        report.broken.push({ page, url, reason: 'no such file' });
      } else if (anchor !== '' && posix.extname(target) === '.md') {
        report.anchors += 1;
        if (!anchorsFor(target).has(anchor)) report.broken.push({ page, url, reason: 'no such anchor' });
      }
    }
  }
  return report;
}

/**
 * A code span that names a file of the repository (`test/api/cli.test.ts`, `packages/a2a/src/sse.ts`): a path
 * under one of the repository's top folders ending in a file extension, with no wildcard or placeholder. Pages
 * name files this way far more often than they link them, and a moved file leaves such a span stale.
 */
const REPOSITORY_PATH = /^(?:test|packages|bench|docs|demo|examples|scripts|deploy)\/[A-Za-z0-9_./-]+\.(?:ts|lua|md|mjs|cjs|json|ya?ml|sh|proto)$/;

/** The code spans of a page that name a repository file (see REPOSITORY_PATH), in document order. */
export function pathSpans(text: string): string[] {
  const paths: string[] = [];
  visit(parse(text), (node) => {
    if (node.type === 'inlineCode' && REPOSITORY_PATH.test((node as { value: string }).value)) paths.push((node as { value: string }).value);
  });
  return paths;
}

/**
 * The code spans naming repository files that name none: each is read from the repository's root, or (a package's
 * README naming its own files) from the page's folder.
 */
export function checkPathSpans(pages: readonly string[], source: PageSource): { checked: number; missing: { page: string; path: string }[] } {
  const report = { checked: 0, missing: [] as { page: string; path: string }[] };
  for (const page of pages) {
    for (const path of pathSpans(source.read(page))) {
      report.checked += 1;
      if (!source.exists(path) && !source.exists(posix.join(posix.dirname(page), path))) report.missing.push({ page, path });
    }
  }
  return report;
}

/** The pages of a checkout at `root`, read from disk. */
export function diskSource(root: string): PageSource {
  return {
    exists: (path) => existsSync(resolve(root, path)),
    read: (path) => readFileSync(resolve(root, path), 'utf8'),
  };
}
