/**
 * Code examples of the documentation, run as written: the fenced block after a `<!-- snippet:` marker is written
 * next to the tests (so that packages resolve as in a caller's project) and run with Node from the sources.
 */
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SOURCE_EXEC_ARGV } from './fleet.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The fenced `ts` block that follows the `<!-- snippet:` marker of the page at `page` (relative to the repository). */
export function snippetOf(page: string): string {
  const markdown = readFileSync(new URL(`../../${page}`, import.meta.url), 'utf8');
  const marker = markdown.indexOf('<!-- snippet:');
  const block = marker < 0 ? null : /```ts\n([\s\S]*?)```/.exec(markdown.slice(marker));
  if (!block) throw new Error(`${page}: no fenced ts block after a <!-- snippet: marker`);
  return block[1]!;
}

/** Runs `code` as an ES module with `env` added to the environment; resolves with its exit code and its output (stdout and stderr). */
export async function runSnippet(code: string, env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const file = fileURLToPath(new URL(`./.snippet-${randomUUID()}.ts`, import.meta.url));
  writeFileSync(file, code);
  try {
    const child = spawn(process.execPath, [...SOURCE_EXEC_ARGV, file], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exitCode = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code: exitCode, output };
  } finally {
    rmSync(file, { force: true });
  }
}
