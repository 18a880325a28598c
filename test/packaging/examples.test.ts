/** The README's runnable example must keep running: `pnpm example`. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { SOURCE_EXEC_ARGV } from '../harness/fleet.ts';

it('pnpm example: a delegation and a re-delegated workflow, each question answered on its task', async () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const environment = { ...process.env };
  delete environment.REDIS_URL;
  const child = spawn(process.execPath, [...SOURCE_EXEC_ARGV, 'examples/quickstart.ts'], { cwd: root, env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(0);
  expect(output).toContain('order-1001: COMPLETED');
  expect(output).toMatch(/trip-2001 hotel\.1: REJECTED .*we only take bookings by phone/);
  expect(output).toMatch(/trip-2001 hotel\.2: COMPLETED .*booked two/);
  expect(output).toContain('trip-2001: COMPLETED');
}, 60_000);
