/**
 * `pnpm demo --keep` prints the worker's /metrics address with the API's, and stops everything it started on SIGTERM,
 * not only on Ctrl+C (a container stop or `kill` sends SIGTERM), and exits 0.
 */
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { findFreePort } from '../harness/ports.ts';
import { eventually } from '../harness/fleet.ts';

/** Every descendant pid of `pid` (children, grandchildren…). */
function descendants(pid: number): number[] {
  let listing = '';
  try {
    listing = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
  } catch {
    return []; // ps exits 1 when the process has no children
  }
  const children = listing.split('\n').map((line) => Number(line.trim())).filter((child) => child > 0);
  return children.flatMap((child) => [child, ...descendants(child)]);
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it('pnpm demo --keep: the worker /metrics address printed and answering; SIGTERM stops the workers, the agents and redis-server, and exits 0', async () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const environment: NodeJS.ProcessEnv = { ...process.env, PORT: String(await findFreePort()) };
  delete environment.REDIS_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'demo/travel.ts', '--keep'], { cwd: root, env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await eventually(async () => output.includes('to stop.'), 'demo waiting in --keep', 150_000, 200);
  const started = descendants(child.pid!);
  expect(started.length).toBeGreaterThanOrEqual(2); // the recovering worker process and redis-server (the first worker was SIGKILLed)
  // The pid it tells people to send SIGTERM to is its own (not pnpm's, which answers SIGTERM with ELIFECYCLE).
  expect(output).toContain(`kill ${child.pid}`);
  // It prints where the worker's metrics are, and they answer there.
  const workerMetrics = /^Worker: +(http:\/\/127\.0\.0\.1:\d+\/metrics)/m.exec(output)?.[1];
  expect(workerMetrics).toBeDefined();
  expect(await (await fetch(workerMetrics!)).text()).toContain('durable_a2a_sends_total');
  child.kill('SIGTERM');
  // A clean stop after a passing run: exit 0, not a failure.
  expect(await exited).toBe(0);
  await eventually(async () => started.every((pid) => !alive(pid)), 'every child stopped', 10_000);
}, 200_000);
