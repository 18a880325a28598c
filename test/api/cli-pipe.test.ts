/**
 * `durable-a2a … | head` closes the CLI's stdout before it has written everything: the CLI stops quietly
 * (exit 0), as command-line tools do, instead of dying on an unhandled EPIPE with a stack trace.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { SOURCE_EXEC_ARGV } from '../harness/fleet.ts';

it('stdout closed by the reader: exit 0, nothing on stderr', async () => {
  const main = fileURLToPath(new URL('../../packages/cli/src/main.ts', import.meta.url));
  const child = spawn(process.execPath, [...SOURCE_EXEC_ARGV, main, '--help'], { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  // The reader goes away before the CLI has started (it takes far longer to load), so its first write meets a closed pipe.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(stderr).toBe('');
  expect(code).toBe(0);
});
