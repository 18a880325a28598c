/**
 * Waiting for an agent that cannot be reached is not failing (field case N31, scaled: the agent starts 8 s after the
 * create instead of 40 s). Several card fetches are refused meanwhile; the delegation completes once the agent is
 * up, with exactly one SendMessage, and every poll while it waits shows the last error, the tries and a next try in
 * the future (API, CLI format, /ui). A step whose `unreachableForMs` elapses ends FAILED `AGENT_UNREACHABLE` and goes
 * to another agent with the skill (nothing was sent, so this is safe).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Fleet } from '@durable-a2a/workers';
import type { ApiServer } from '@durable-a2a/producer/server';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { formatTimeline } from '../../packages/cli/src/format.ts';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { authorized, startTestServer } from '../harness/api-server.ts';
import { findFreePort } from '../harness/ports.ts';

const redisServer = useRedisServer();
const prefix = 'wait-agent';
/** How long the agent stays down (the field case's 40 s, scaled down). */
const DOWN_MS = 8_000;
const LATE_SKILL = { id: 'late-skill', name: 'late skill', description: 'books late', tags: [] };
let fleet: Fleet;
let app: ApiServer;
let producer: Producer;
const agents: DemoAgentHandle[] = [];

beforeAll(async () => {
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, unreachableBackoff: { baseMs: 200, capMs: 1_500 } });
  app = startTestServer({ redisUrl: redisServer().url, prefix });
  await app.ready();
  producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix });
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await producer?.close();
  for (const agent of agents) await agent.close();
});

interface AttemptBody {
  state: string;
  progress: string;
  tries: number;
  agentCardUrl: string;
  lastError?: { code: string; message: string; delivery?: string };
  error?: { code: string; message: string };
  nextTryAt?: string;
  nextCheckAt?: string;
  unreachableSince?: string;
}
interface ViewBody {
  state: string;
  steps: { name: string; attempts: AttemptBody[] }[];
}

const viewOf = async (id: string): Promise<ViewBody> => {
  const response = await authorized(app, { method: 'GET', url: `/v1/workflows/${id}` });
  expect(response.statusCode).toBe(200);
  return response.json() as ViewBody;
};

it('N31: an agent that starts 8 s after the create: COMPLETED once it is up, one SendMessage; meanwhile the view shows why it waits', async () => {
  const port = await findFreePort();
  const cardUrl = `http://127.0.0.1:${port}/.well-known/agent-card.json`;
  const created = await authorized(app, { method: 'POST', url: '/v1/delegations', payload: { agent: cardUrl, text: 'do it when you are back', idempotencyKey: 'late-1' } });
  expect(created.statusCode).toBeLessThan(300);
  const startedAt = Date.now();

  // Polled while the agent is down: bounded by DOWN_MS (each poll is one GET).
  const waits: AttemptBody[] = [];
  let page = '';
  let timeline = '';
  for (let polls = 0; Date.now() - startedAt < DOWN_MS && polls < 400; polls++) {
    const polledAt = Date.now();
    const view = await viewOf('late-1');
    expect(view.state).toBe('RUNNING');
    const attempt = view.steps[0]!.attempts[0]!;
    expect(attempt.state).toBe('INTENT');
    if (attempt.progress === 'waiting for the agent') {
      // Never in the past while waiting: the next try, and the reconciler's next check after it.
      expect(Date.parse(attempt.nextTryAt!)).toBeGreaterThan(polledAt);
      expect(Date.parse(attempt.nextCheckAt!)).toBeGreaterThan(polledAt);
      expect(attempt.tries).toBeGreaterThan(0);
      expect(attempt.lastError).toMatchObject({ code: 'NETWORK_ERROR', message: expect.stringContaining('ECONNREFUSED'), delivery: 'not-sent' });
      expect(attempt.unreachableSince).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
      // The page is read on its own request: between two tries it may catch the attempt at its next try, so it is
      // read again on the next waiting poll until it shows the wait.
      if (!page.includes('waiting for the agent')) page = (await authorized(app, { method: 'GET', url: '/ui/workflows/late-1' })).body;
      if (!/waiting for the agent \(unreachable since .*\): next try \d{4}-/.test(timeline)) timeline = formatTimeline((await producer.get('late-1')) as unknown as Parameters<typeof formatTimeline>[0]);
      waits.push(attempt);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // Several refused card fetches, each journaled: the tries grow while the agent is down.
  expect(waits.length).toBeGreaterThan(3);
  expect(Math.max(...waits.map((attempt) => attempt.tries))).toBeGreaterThanOrEqual(3);
  expect(timeline).toMatch(/last error: NETWORK_ERROR: .*ECONNREFUSED/);
  expect(timeline).toMatch(/waiting for the agent \(unreachable since .*\): next try \d{4}-/);
  expect(page).toContain('waiting for the agent');
  expect(page).toContain('next try');
  expect(page).toContain('ECONNREFUSED');

  const agent = await startDemoAgent({ port });
  agents.push(agent);
  await eventually(async () => (await viewOf('late-1')).state === 'COMPLETED', 'late-1 COMPLETED once the agent is up', 60_000, 100);
  const attempts = (await viewOf('late-1')).steps[0]!.attempts;
  expect(attempts).toHaveLength(1);
  expect(attempts[0]).toMatchObject({ state: 'COMPLETED', progress: 'finished' });
  expect(attempts[0]!.nextTryAt).toBeUndefined();
  expect(agent.sendMessageCount()).toBe(1);
}, 120_000);

it('unreachableForMs elapsed: FAILED AGENT_UNREACHABLE, the step goes to another agent with the skill, which runs it once', async () => {
  const down = await startDemoAgent({ skills: [LATE_SKILL] });
  const up = await startDemoAgent({ skills: [LATE_SKILL] });
  agents.push(down, up);
  const first = await producer.registerAgent(down.cardUrl);
  // Registration order decides the first candidate: the second agent is registered a millisecond later at least.
  await eventually(async () => Date.now() > Date.parse(first.registeredAt), 'a later millisecond', 1_000, 1);
  await producer.registerAgent(up.cardUrl);
  await down.stop();
  const { id } = await producer.startWorkflow({
    workflowId: 'unreachable-for',
    steps: [{ name: 'main', skill: 'late-skill', message: { text: 'book' }, unreachableForMs: 2_000 }],
    maxAttemptsPerStep: 2,
  });
  await eventually(async () => (await viewOf(id)).state === 'COMPLETED', 'completed by the second agent', 60_000, 100);
  const attempts = (await viewOf(id)).steps[0]!.attempts;
  expect(attempts).toHaveLength(2);
  expect(attempts[0]).toMatchObject({ state: 'FAILED', agentCardUrl: down.cardUrl, lastError: { code: 'AGENT_UNREACHABLE', delivery: 'not-sent' } });
  expect(attempts[0]!.tries).toBeGreaterThan(1);
  expect(attempts[1]).toMatchObject({ state: 'COMPLETED', agentCardUrl: up.cardUrl });
  expect(down.sendMessageCount()).toBe(0);
  expect(up.sendMessageCount()).toBe(1);
}, 120_000);
