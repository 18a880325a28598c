/**
 * The install commands the docs give before publication (`npm install $DA2A/dist-packages/durable-a2a-<name>-<version>.tgz …`)
 * must name every @durable-a2a package the named ones depend on: npm looks for a left-out one on the registry, where it
 * is not, and fails with a 404 (a new user's trial: the README's command lacked `@durable-a2a/a2a`). Also: the version in
 * each tarball's name is the package's. A static check of every Markdown file a user reads; the packed-install test runs
 * an install for real.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
}
const manifests = new Map<string, Manifest>(
  readdirSync(join(root, 'packages')).map((directory) => {
    const manifest = JSON.parse(readFileSync(join(root, 'packages', directory, 'package.json'), 'utf8')) as Manifest;
    return [manifest.name.replace('@durable-a2a/', ''), manifest];
  }),
);
/** The @durable-a2a packages `name` needs installed with it (its dependencies, transitively), itself included. */
function closure(name: string, into = new Set<string>()): Set<string> {
  if (into.has(name)) return into;
  into.add(name);
  for (const dependency of Object.keys(manifests.get(name)?.dependencies ?? {})) {
    if (dependency.startsWith('@durable-a2a/')) closure(dependency.replace('@durable-a2a/', ''), into);
  }
  return into;
}

const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(root, 'docs')).filter((file) => file.endsWith('.md')).map((file) => `docs/${file}`),
  ...readdirSync(join(root, 'packages')).map((directory) => `packages/${directory}/README.md`),
].filter((file) => {
  try {
    readFileSync(join(root, file));
    return true;
  } catch {
    return false;
  }
});
const TARBALL = /dist-packages\/durable-a2a-([a-z0-9-]+?)-(\d+\.\d+\.\d+)\.tgz/g;

/** Each fenced block's npm install commands (continuation lines joined), in order. */
function installCommands(markdown: string): string[][] {
  const blocks = markdown.split(/^```/m).filter((_, index) => index % 2 === 1);
  return blocks.map((block) => block.replace(/\\\n/g, ' ').split('\n').filter((line) => /\bnpm (install|i)\b/.test(line) && line.includes('dist-packages/durable-a2a-')));
}

describe('install commands in the docs name every package they need', () => {
  const commands = DOCUMENTS.flatMap((file) => installCommands(readFileSync(join(root, file), 'utf8')).flatMap((block, index) => (block.length ? [{ file, index, block }] : [])));

  it('the docs hold install commands to check (README and the guide at least)', () => {
    expect(commands.map(({ file }) => file)).toEqual(expect.arrayContaining(['README.md', 'docs/guide.md']));
  });

  for (const { file, index, block } of commands) {
    it(`${file}, block ${index + 1}: every @durable-a2a dependency of what it installs is installed with it, at its version`, () => {
      // Commands of one block run in one project: a later `npm install -D …` resolves what an earlier one installed.
      const installed = new Set<string>();
      for (const command of block) {
        const named = [...command.matchAll(TARBALL)].map((match) => ({ name: match[1]!, version: match[2]! }));
        for (const { name, version } of named) {
          expect(manifests.has(name), `${name}: no such package`).toBe(true);
          expect(version, `${name}'s tarball version`).toBe(manifests.get(name)!.version);
        }
        for (const { name } of named) installed.add(name);
        const global = /\s-g\b|--global/.test(command);
        const available = global ? new Set(named.map(({ name }) => name)) : installed;
        const needed = new Set(named.flatMap(({ name }) => [...closure(name)]));
        expect([...needed].filter((name) => !available.has(name)), `${command.trim()}`).toEqual([]);
      }
    });
  }

  it('the check catches a left-out dependency (the README command before the fix)', () => {
    const before = 'npm install $DA2A/dist-packages/durable-a2a-shared-0.2.0.tgz $DA2A/dist-packages/durable-a2a-producer-0.2.0.tgz';
    const named = [...before.matchAll(TARBALL)].map((match) => match[1]!);
    const needed = new Set(named.flatMap((name) => [...closure(name)]));
    expect([...needed].filter((name) => !named.includes(name))).toEqual(['a2a']);
  });
});
