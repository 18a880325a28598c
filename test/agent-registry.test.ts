/**
 * The agent registry end to end (real Redis, real API, real workers, real agents): one agent per card URL whatever
 * its spelling (finding 3: `agents add` of the base URL, the card URL and the base URL with a slash gave three
 * entries, so "another agent with the same skill" could be the same agent), entries written before normalization
 * merged on read, disable / enable / remove through the API, and each agent's health (last card fetch, last error,
 * success rate) from registrations, card fetches and SendMessages.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { normalizeAgentCardUrl } from '@durable-a2a/a2a';
import { AgentRegistry, candidateAgents, type AgentView } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from './harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from './harness/agent.ts';
import { asksForInput, completesWith, completionSteps, fails } from './harness/agent-behaviours.ts';
import { eventually, startTestFleet } from './harness/fleet.ts';
import { authorized, startTestServer } from './harness/api-server.ts';

const redisServer = useRedisServer();
const skill = (id: string) => [{ id, name: id, description: id, tags: [] }];
let failing: DemoAgentHandle;
let asking: DemoAgentHandle;
let finishing: DemoAgentHandle;
let producer: Producer | undefined;
let app: ApiServer | undefined;
let fleet: Fleet | undefined;
let counter = 0;

beforeAll(async () => {
  failing = await startDemoAgent({ name: 'Failing', skills: skill('book'), behaviour: fails('no rooms left') });
  asking = await startDemoAgent({ name: 'Asking', skills: skill('seat'), behaviour: asksForInput('Window or aisle?', (answer) => completionSteps(`seat ${answer}`)) });
  finishing = await startDemoAgent({ name: 'Finishing', skills: skill('seat'), behaviour: completesWith('seat given') });
});
afterAll(async () => {
  await Promise.all([failing?.close(), asking?.close(), finishing?.close()]);
});
afterEach(async () => {
  await fleet?.close();
  await app?.close();
  await producer?.close();
  fleet = undefined;
  app = undefined;
  producer = undefined;
});

/** A producer and the API on a fresh prefix (and the fleet with `withFleet`). */
async function setUp(withFleet = false): Promise<{ prefix: string; app: ApiServer; producer: Producer }> {
  const prefix = `registry${++counter}`;
  producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  app = startTestServer({ redisUrl: redisServer().url, prefix, producer });
  await app.ready();
  if (withFleet) fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
  return { prefix, app, producer };
}

const register = async (server: ApiServer, cardUrl: string) => authorized(server, { method: 'POST', url: '/v1/agents', payload: { cardUrl } });
const listed = async (server: ApiServer): Promise<AgentView[]> => (await authorized(server, { method: 'GET', url: '/v1/agents' })).json().agents;
const spellingsOf = (agent: DemoAgentHandle) => [agent.baseUrl, agent.cardUrl, `${agent.baseUrl}/`];

describe('finding 3: one agent per card URL, whatever its spelling', () => {
  it('the base URL, the card URL and the base URL with a slash register one agent with one id; candidateAgents returns it once', async () => {
    const { prefix, app: server } = await setUp();
    const answers = [];
    for (const spelling of spellingsOf(failing)) answers.push(await register(server, spelling));
    expect(answers.map((answer) => answer.statusCode)).toEqual([201, 201, 201]);
    const ids = new Set(answers.map((answer) => answer.json().id));
    expect(ids.size).toBe(1);
    const agents = await listed(server);
    expect(agents).toHaveLength(1);
    expect(agents[0]).toMatchObject({ id: [...ids][0], cardUrl: failing.cardUrl, status: 'active', statusReason: null });
    const redis = new Redis(redisServer().url);
    try {
      const registered = await new AgentRegistry(redis, { prefix }).list();
      expect(candidateAgents({ skill: 'book' }, registered)).toEqual([failing.cardUrl]);
      expect(candidateAgents({ agent: `${failing.baseUrl}/`, skill: 'book' }, registered)).toEqual([`${failing.baseUrl}/`]);
    } finally {
      redis.disconnect();
    }
  });

  it('maxAttemptsPerStep 2 and this one agent (added three ways): the step fails after one attempt, never re-delegated to itself', async () => {
    const { app: server, producer: library } = await setUp(true);
    for (const spelling of spellingsOf(failing)) expect((await register(server, spelling)).statusCode).toBe(201);
    const before = failing.sendMessageCount();
    const { id } = await library.startWorkflow({ workflowId: 'one-agent', maxAttemptsPerStep: 2, steps: [{ name: 'main', skill: 'book', message: { text: 'book a room' } }] });
    const view = await library.waitFor(id, { timeoutMs: 30_000 });
    expect(view.state).toBe('FAILED');
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(failing.sendMessageCount() - before).toBe(1);
    expect(JSON.stringify(view.failure)).toContain('no other agent can run step main');
  });

  it('entries stored under three spellings before normalization are merged on read: the newest card, the earliest registration', async () => {
    const { prefix, app: server } = await setUp();
    const redis = new Redis(redisServer().url);
    try {
      const entry = (cardUrl: string, registeredAt: number, refreshedAt: number, name: string) =>
        JSON.stringify({ cardUrl, registeredAt, refreshedAt, card: { name, description: '', version: '1', skills: skill('book'), capabilities: {}, interfaces: [{ url: `${failing.baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] } });
      const [base, card, slash] = spellingsOf(failing);
      await redis.hset(`${prefix}:agents`, base!, entry(base!, 2_000, 5_000, 'newest'), card!, entry(card!, 3_000, 3_000, 'older'), slash!, entry(slash!, 1_000, 1_000, 'oldest'));
      const agents = await listed(server);
      expect(agents).toHaveLength(1);
      expect(agents[0]).toMatchObject({ cardUrl: failing.cardUrl, card: { name: 'newest' }, registeredAt: new Date(1_000).toISOString(), refreshedAt: new Date(5_000).toISOString() });
      expect(await redis.hkeys(`${prefix}:agents`)).toEqual([failing.cardUrl]);
    } finally {
      redis.disconnect();
    }
  });
});

describe('disable, enable and remove through the API', () => {
  it('a disabled agent is never picked for a skill and says why; a delegation already bound to it goes on; enabled, it is picked again', async () => {
    const { app: server, producer: library } = await setUp(true);
    const asker = (await register(server, asking.cardUrl)).json() as AgentView;
    const finisher = (await register(server, finishing.baseUrl)).json() as AgentView;
    const seatWorkflow = (workflowId: string) => library.startWorkflow({ workflowId, steps: [{ name: 'seat', skill: 'seat', message: { text: 'a seat please' } }] });
    await seatWorkflow('bound');
    await library.waitFor('bound', { timeoutMs: 30_000, untilQuestion: true });

    const disabled = await authorized(server, { method: 'POST', url: `/v1/agents/${asker.id}/disable`, payload: { reason: 'maintenance window' } });
    expect(disabled.statusCode).toBe(200);
    expect(disabled.json()).toMatchObject({ id: asker.id, status: 'disabled', statusReason: expect.stringContaining('maintenance window'), disabled: { reason: 'maintenance window' } });

    await seatWorkflow('while-disabled');
    const other = await library.waitFor('while-disabled', { timeoutMs: 30_000 });
    expect(other.state).toBe('COMPLETED');
    expect(other.steps[0]!.attempts.map((attempt) => attempt.agentCardUrl)).toEqual([finisher.cardUrl]);

    await library.reply('bound', 'aisle');
    const bound = await library.waitFor('bound', { timeoutMs: 30_000 });
    expect(bound.state).toBe('COMPLETED');
    expect(bound.steps[0]!.attempts.map((attempt) => attempt.agentCardUrl)).toEqual([asking.cardUrl]);

    const enabled = await authorized(server, { method: 'POST', url: `/v1/agents/${encodeURIComponent(asking.baseUrl)}/enable` });
    expect(enabled.statusCode).toBe(200);
    expect(enabled.json()).toMatchObject({ status: 'active', statusReason: null, disabled: null });
    await seatWorkflow('after-enable');
    const again = await library.waitFor('after-enable', { timeoutMs: 30_000, untilQuestion: true });
    expect(again.steps[0]!.attempts[0]!.agentCardUrl).toBe(asking.cardUrl);
    // The finisher's send was recorded: its registration's card fetch and one SendMessage, both successes (a worker
    // writes an agent's health in windows of AGENT_HEALTH_WINDOW_MS: the SendMessage shows within one).
    const health = await eventually(async () => (await listed(server)).find((agent) => agent.id === finisher.id && agent.health.calls >= 2), "the finisher's SendMessage recorded");
    expect(health).toMatchObject({ lastSuccessAt: expect.any(String), lastCardFetchOk: true, lastError: null });
    expect(health.health.calls).toBeGreaterThanOrEqual(2);
    expect(health.health.successRate).toBe(1);
  });

  it('removes by id and by card URL in another spelling; 404 when no such agent, 400 for neither an id nor a URL', async () => {
    const { app: server } = await setUp();
    const first = (await register(server, failing.cardUrl)).json() as AgentView;
    await register(server, finishing.cardUrl);
    const removed = await authorized(server, { method: 'DELETE', url: `/v1/agents/${first.id}` });
    expect(removed.statusCode).toBe(200);
    expect(removed.json()).toEqual({ id: first.id, cardUrl: failing.cardUrl, removed: true });
    expect((await authorized(server, { method: 'DELETE', url: `/v1/agents/${first.id}` })).statusCode).toBe(404);
    const byUrl = await authorized(server, { method: 'DELETE', url: `/v1/agents/${encodeURIComponent(`${finishing.baseUrl.toUpperCase()}/`)}` });
    expect(byUrl.statusCode).toBe(200);
    expect(await listed(server)).toEqual([]);
    expect((await authorized(server, { method: 'DELETE', url: '/v1/agents/not-an-agent' })).statusCode).toBe(400);
    const missing = await authorized(server, { method: "POST", url: `/v1/agents/${first.id}/disable` });
    expect(missing.statusCode, missing.body).toBe(404);
  });
});

describe('health: last card fetch, last error, success rate', () => {
  it('a failing card fetch (registration, then a worker) shows as the last error with the success rate', async () => {
    const { app: server, producer: library } = await setUp();
    const down = await startDemoAgent({ name: 'Goes down', skills: skill('book') });
    try {
      expect((await register(server, down.cardUrl)).statusCode).toBe(201);
      expect((await listed(server))[0]).toMatchObject({ lastCardFetchAt: expect.any(String), lastCardFetchOk: true, lastError: null, health: { calls: 1, successes: 1, successRate: 1 } });
      await down.stop();
      expect((await register(server, down.baseUrl)).statusCode).toBeGreaterThanOrEqual(400);
      const [afterRegistration] = await listed(server);
      expect(afterRegistration).toMatchObject({ lastCardFetchOk: false, lastError: { kind: 'card', message: expect.any(String), at: expect.any(String) }, health: { calls: 2, successes: 1, successRate: 0.5 } });

      fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: `registry${counter}` });
      await library.delegate({ agent: down.cardUrl, text: 'are you there?', idempotencyKey: 'down-1' });
      const afterWorker = await eventually(async () => {
        const [agent] = await listed(server);
        return agent && agent.health.calls >= 3 && agent;
      }, 'the worker recorded its failed card fetch');
      expect(afterWorker).toMatchObject({ lastCardFetchOk: false, lastError: { kind: 'card' } });
      expect(afterWorker.health.successes).toBe(1);
      // /ui shows the same: the status, the success rate, the failed card fetch and the error.
      const page = await authorized(server, { method: 'GET', url: '/ui/agents' });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain(afterWorker.id);
      expect(page.body).toContain(`${Math.round(afterWorker.health.successRate! * 100)}% of ${afterWorker.health.calls}`);
      expect(page.body).toMatch(/failed<\/span>/);
      expect(page.body).toContain(`card: ${afterWorker.lastError!.message.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;')}`);
      expect(Date.parse(afterWorker.lastCardFetchAt!)).toBeGreaterThanOrEqual(Date.parse(afterRegistration!.lastCardFetchAt!));
    } finally {
      await down.close();
    }
  });

  it('calls to an agent that is not registered leave no health entry', async () => {
    const { prefix, producer: library } = await setUp(true);
    const { id } = await library.delegate({ agent: finishing.baseUrl, text: 'unregistered', idempotencyKey: 'unregistered-1' });
    expect((await library.waitFor(id, { timeoutMs: 30_000 })).state).toBe('COMPLETED');
    const redis = new Redis(redisServer().url);
    try {
      expect(await redis.hlen(`${prefix}:agents:health`)).toBe(0);
      expect(normalizeAgentCardUrl(finishing.baseUrl)).toBe(finishing.cardUrl);
    } finally {
      redis.disconnect();
    }
  });
});
