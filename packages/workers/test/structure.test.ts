/**
 * What dependency-cruiser cannot see (it checks modules, not the methods called): the journal's transition methods
 * (status, artifacts, notes, resend release, reply fate, verifier finding) are called in the workers only by the
 * delegation core's executor (`delegation/apply.ts`). A new call site elsewhere is a second place deciding what an
 * observation proves: this test names it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SOURCE = join(import.meta.dirname, '..', 'src');
/** The executor's modules: the entry and its writes. */
const EXECUTOR = ['delegation/apply.ts'];
/** The journal's transitions (journal methods and the free functions of `journal/observe.ts`). */
const TRANSITIONS = /\b(applyStatus|applyTask|applyStreamResponse|applyStreamResponsePair|applyArtifactThenStatus|noteProtocolError|noteNotFound|noteNoProgress|releaseForResend|markReply|recordEffect)\s*\(/;

function sources(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Code lines of a file, without comment lines (a doc comment may name a transition). */
const codeLines = (text: string) => text.split('\n').filter((line) => !/^\s*(\*|\/\/|\/\*\*)/.test(line));

describe('one executor', () => {
  it('finds the workers sources (the check cannot pass vacuously)', () => {
    const files = sources(SOURCE).map((path) => relative(SOURCE, path));
    expect(files).toEqual(expect.arrayContaining(EXECUTOR));
    expect(files.length).toBeGreaterThan(40);
    expect(EXECUTOR.some((file) => codeLines(readFileSync(join(SOURCE, file), 'utf8')).some((line) => TRANSITIONS.test(line)))).toBe(true);
  });

  it('only the push config life cycle (delegation/push-registration.ts) journals push config steps', () => {
    const callers = sources(SOURCE)
      .map((path) => relative(SOURCE, path))
      .filter((file) => file !== 'delegation/push-registration.ts')
      .flatMap((file) => codeLines(readFileSync(join(SOURCE, file), 'utf8')).filter((line) => /\bnotePushConfig\s*\(/.test(line)).map((line) => `${file}: ${line.trim()}`));
    expect(callers).toEqual([]);
    expect(codeLines(readFileSync(join(SOURCE, 'delegation/push-registration.ts'), 'utf8')).some((line) => /\bnotePushConfig\s*\(/.test(line))).toBe(true);
  });

  it('no module but the executor (apply.ts) calls a journal transition', () => {
    const callers = sources(SOURCE)
      .map((path) => relative(SOURCE, path))
      .filter((file) => !EXECUTOR.includes(file))
      .flatMap((file) => codeLines(readFileSync(join(SOURCE, file), 'utf8')).filter((line) => TRANSITIONS.test(line)).map((line) => `${file}: ${line.trim()}`));
    expect(callers).toEqual([]);
  });
});
