/**
 * What `durable-a2a --help` tells a newcomer without the README: every exit code the CLI returns, and that
 * `agents` alone lists the registered agents (its subcommands are `add` and `list`).
 */
import { expect, it } from 'vitest';
import { EXIT_CODES, run } from '../src/program.ts';

async function cli(argv: string[]) {
  let stdout = '';
  let stderr = '';
  // Port 9 (discard) on loopback: nothing listens, so a command that calls the API ends UNREACHABLE.
  const code = await run(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: { DURABLE_A2A_URL: 'http://127.0.0.1:9' } });
  return { code, stdout, stderr };
}

it('--help lists every exit code with its number', async () => {
  const { code, stdout } = await cli(['--help']);
  expect(code).toBe(EXIT_CODES.OK);
  expect(stdout).toContain('Exit codes:');
  for (const value of Object.values(EXIT_CODES)) expect(stdout).toMatch(new RegExp(`^ {2}${value} {2}\\S`, 'm'));
});

it('agents alone runs agents list (it calls the API) instead of failing as bad usage', async () => {
  const bare = await cli(['agents']);
  const list = await cli(['agents', 'list']);
  expect(bare.code).toBe(EXIT_CODES.UNREACHABLE);
  expect(bare).toEqual(list);
});
