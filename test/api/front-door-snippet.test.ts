/**
 * The client example of docs/front-door.md runs as written: the fenced block after its `<!-- snippet:` marker is
 * written to a file and run with Node against a real API, worker fleet and agent; the agent gets exactly one
 * SendMessage and the caller's task completes.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { completesWith } from '@durable-a2a/testing';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { startTestFleet } from '../harness/fleet.ts';
import { runSnippet, snippetOf } from '../harness/doc-snippet.ts';
import { TEST_API_TOKEN, listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { bearerFetch } from '../harness/front-door.ts';

const redisServer = useRedisServer();
const prefix = 'fd-snippet';
let agent: DemoAgentHandle;
let app: ApiServer;
let fleet: Fleet;

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
  const { code, output } = await runSnippet(snippetOf('docs/front-door.md'), { DA2A_URL: baseUrl, DA2A_TOKEN: TEST_API_TOKEN });
  expect(output).toContain('TASK_STATE_COMPLETED');
  expect(code).toBe(0);
  expect(agent.receivedMessages.filter((message) => !message.isFollowUp)).toHaveLength(1);
}, 60_000);
