/**
 * The client example of docs/front-door.md runs as written: the fenced block after its `<!-- snippet:` marker is
 * written to a file and run with Node against a real API, worker fleet and agent; the agent gets exactly one
 * SendMessage and the caller's task completes.
 */
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { completesWith } from '@durable-a2a/testing';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { SOURCE_EXEC_ARGV, startTestFleet } from '../harness/fleet.ts';
import { TEST_API_TOKEN, listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { bearerFetch } from '../harness/front-door.ts';

const redisServer = useRedisServer();
const prefix = 'fd-snippet';
let agent: DemoAgentHandle;
let app: ApiServer;
let fleet: Fleet;

/** The fenced `ts` block that follows the `<!-- snippet:` marker in `markdown`. */
function snippetOf(markdown: string): string {
  const marker = markdown.indexOf('<!-- snippet:');
  expect(marker).toBeGreaterThan(-1);
  const block = /```ts\n([\s\S]*?)```/.exec(markdown.slice(marker));
  expect(block).not.toBeNull();
  return block![1]!;
}

beforeAll(async () => {
  agent = await startDemoAgent({ name: 'Hotel agent', skills: [{ id: 'book-hotel', name: 'Book hotel', description: 'Books rooms', tags: [] }], behaviour: completesWith('room booked') });
  app = startTestServer({ redisUrl: redisServer().url, prefix });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await agent?.close();
});

it('docs/front-door.md: the client example completes a task with one SendMessage at the agent', async () => {
  const baseUrl = await listenOnLoopback(app);
  const registered = await bearerFetch()(`${baseUrl}/v1/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cardUrl: agent.cardUrl }) });
  expect(registered.status).toBeLessThan(300);
  const root = fileURLToPath(new URL('../..', import.meta.url));
  // Inside the repository, so that `@a2a-js/sdk` resolves as it would in a caller's project.
  const file = fileURLToPath(new URL(`./.front-door-snippet-${randomUUID()}.ts`, import.meta.url));
  writeFileSync(file, snippetOf(readFileSync(new URL('../../docs/front-door.md', import.meta.url), 'utf8')));
  try {
    const child = spawn(process.execPath, [...SOURCE_EXEC_ARGV, file], { cwd: root, env: { ...process.env, DA2A_URL: baseUrl, DA2A_TOKEN: TEST_API_TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(output).toContain('TASK_STATE_COMPLETED');
    expect(code).toBe(0);
  } finally {
    rmSync(file, { force: true });
  }
  expect(agent.receivedMessages.filter((message) => !message.isFollowUp)).toHaveLength(1);
}, 60_000);
