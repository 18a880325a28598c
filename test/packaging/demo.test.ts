/** `pnpm demo` and `pnpm demo:front-door` are part of `pnpm test`: each scenario must print its timeline and exit 0. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { SOURCE_EXEC_ARGV } from '../harness/fleet.ts';

it.each([
  ['pnpm demo runs the travel scenario green', 'demo/travel.ts', 'hotel: found by our messageId in ListTasks', true],
  ['pnpm demo:front-door runs the orchestrator as a plain A2A client green', 'demo/travel-front-door.ts', 'the flight agent saw exactly 1 SendMessage', false],
])('%s', async (_name, script, milestone, sagaTable) => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const environment = { ...process.env };
  delete environment.REDIS_URL; // the demo's embedded redis-server, as a new user runs it
  const child = spawn(process.execPath, [...SOURCE_EXEC_ARGV, script], { cwd: root, env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(output).toContain(milestone);
  expect(output).toMatch(/PASS: \d+ expectations held/);
  // The travel saga's exactly-once table counts every attempt of the history, the canceled car attempt too (it was
  // sent once, then CancelTask'd; the compacted record no longer carries its send mark). The front door demo has no
  // such table: its car is re-delegated after a refusal, not canceled.
  if (sagaTable) expect(output).toMatch(/car\.2 +[0-9a-f-]{36} +1 +CANCELED/);
  expect(code).toBe(0);
}, 120_000);
