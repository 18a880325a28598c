/** The README's runnable example must keep running: `pnpm example`. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { SOURCE_EXEC_ARGV } from '../harness/fleet.ts';
import { useRedisServer } from '../harness/redis.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const redis = useRedisServer();

/** Runs `examples/quickstart.ts` to its exit; `redisUrl` undefined: the example starts its own redis-server. */
async function runExample(redisUrl: string | undefined): Promise<{ code: number | null; output: string }> {
  const environment = { ...process.env };
  delete environment.REDIS_URL;
  if (redisUrl) environment.REDIS_URL = redisUrl;
  const child = spawn(process.execPath, [...SOURCE_EXEC_ARGV, 'examples/quickstart.ts'], { cwd: root, env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}

function expectTheExampleRan({ code, output }: { code: number | null; output: string }): void {
  expect(code, output).toBe(0);
  expect(output).toMatch(/order-1001: COMPLETED/);
  expect(output).toMatch(/trip-2001 hotel\.1: REJECTED .*we only take bookings by phone/);
  expect(output).toMatch(/trip-2001 hotel\.2: COMPLETED .*booked two/);
  expect(output).toContain('trip-2001: COMPLETED');
}

it('pnpm example: a delegation and a re-delegated workflow, each question answered on its task', async () => {
  expectTheExampleRan(await runExample(undefined));
}, 60_000);

// With REDIS_URL (a user's own Redis, where the quick start already journaled `order-1001`): each run is
// isolated, so a second run is not refused as IDEMPOTENCY_CONFLICT (its demo agents listen on new ports).
it('pnpm example with REDIS_URL runs again on the same Redis', async () => {
  expectTheExampleRan(await runExample(redis().url));
  expectTheExampleRan(await runExample(redis().url));
}, 120_000);
