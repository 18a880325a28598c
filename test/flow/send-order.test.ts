/**
 * The send queue's order (docs/flow-control.md "Priorities" and "Tenants"): a delegation's `priority` goes ahead of a
 * burst of lower-priority work, and one tenant's burst does not starve another tenant's delegations. Counted by the
 * agent's order of SendMessage, never timed.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createProducer, ProducerInputError, type Producer } from '@durable-a2a/producer';
import { AgentRegistry, FairSendQueue, SendOrder, bullmqSendPriority, enqueueSend, queuePrefix } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { findFreePort } from '../harness/ports.ts';
import { startTaskAgent, type TaskAgentHandle } from '../harness/task-agent.ts';

const redisServer = useRedisServer();
const open: { close(): Promise<unknown> }[] = [];
let counter = 0;

afterEach(async () => {
  for (const resource of open.splice(0).reverse()) await resource.close().catch(() => undefined);
}, 120_000);

const track = <T extends { close(): Promise<unknown> }>(resource: T): T => (open.push(resource), resource);
const newPrefix = (name: string) => `order-${name}-${++counter}-${Date.now()}`;
const producerOf = (prefix: string): Producer => track(createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } }));
/** The texts of the agent's SendMessage calls, in the order they arrived. */
const sentTexts = (agent: TaskAgentHandle): string[] => agent.calls('SendMessage').map((call) => String((call.params as any).message.parts[0].text));

async function allCompleted(producer: Producer, ids: string[], what: string): Promise<void> {
  await eventually(async () => (await Promise.all(ids.map((id) => producer.get(id)))).every((view) => view.state === 'COMPLETED'), what, 120_000, 200);
}

describe('priorities', () => {
  it('send concurrency 1: 8 low-priority delegations enqueued first; a high-priority one is sent right after the one low send running when it came', async () => {
    const prefix = newPrefix('priority');
    const agent = track(await startTaskAgent({ taskMs: 20, sendMs: 400 }));
    const producer = producerOf(prefix);
    track(await startTestFleet({ redisUrl: redisServer().url, prefix, concurrency: { send: 1 } }));
    const ids: string[] = [];
    for (let index = 0; index < 8; index++) ids.push((await producer.delegate({ agent: agent.cardUrl, text: `low ${index}`, priority: 1, idempotencyKey: `${prefix}-low-${index}` })).id);
    await eventually(async () => agent.count('SendMessage') >= 1, 'the first low send is running', 30_000, 10);
    const startedBefore = agent.count('SendMessage');
    ids.push((await producer.delegate({ agent: agent.cardUrl, text: 'high', priority: 10, idempotencyKey: `${prefix}-high` })).id);
    await allCompleted(producer, ids, 'all 9 delegations COMPLETED');
    const order = sentTexts(agent);
    expect(order).toHaveLength(9);
    // Sent next, or after at most the one low send that may have started while it was being enqueued.
    expect(order.indexOf('high')).toBeLessThanOrEqual(startedBefore + 1);
    expect(order.indexOf('high')).toBeLessThan(8);
  }, 180_000);

  it('a priority outside 1 to 10 is refused before anything is written', async () => {
    const producer = producerOf(newPrefix('refused'));
    await expect(producer.delegate({ agent: 'http://127.0.0.1:1/', text: 'x', priority: 11 })).rejects.toBeInstanceOf(ProducerInputError);
    await expect(producer.delegate({ agent: 'http://127.0.0.1:1/', text: 'x', priority: 0 })).rejects.toBeInstanceOf(ProducerInputError);
    await expect(producer.startWorkflow({ workflowId: 'w', priority: 2.5, steps: [{ name: 's', agent: 'http://127.0.0.1:1/', message: { text: 'x' } }] })).rejects.toBeInstanceOf(ProducerInputError);
  });

  it('bands: a higher priority always sorts before a lower one, whatever the places; within a band the place orders', () => {
    expect(bullmqSendPriority(10, 1e9)).toBeLessThan(bullmqSendPriority(9, 0));
    expect(bullmqSendPriority(1, 1e9)).toBeLessThanOrEqual(2 ** 21 - 1);
    expect(bullmqSendPriority(5, 0)).toBeLessThan(bullmqSendPriority(5, 1));
    expect(bullmqSendPriority(1, 0)).toBeGreaterThan(0);
  });
});

describe('tenants', () => {
  it("tenant a enqueues 10× tenant b's burst first (30 and 3, send concurrency 1): every b delegation is sent before a's backlog drains, within the first 2 × 3 + 1 sends", async () => {
    const prefix = newPrefix('tenants');
    const agent = track(await startTaskAgent({ taskMs: 20 }));
    const producer = producerOf(prefix);
    const redis = new Redis(redisServer().url);
    open.push({ close: () => redis.quit() });
    const queue = track(new FairSendQueue('send', { connection: redis.duplicate(), prefix: queuePrefix(prefix) }, new SendOrder(redis, prefix)));
    // The send jobs carry their tenant (what tenant-owned workflows get from their ids); the producer's own enqueue of
    // the same job id adds nothing.
    const burst = async (tenant: string, count: number): Promise<string[]> => {
      const ids: string[] = [];
      for (let index = 0; index < count; index++) {
        const workflowId = `${prefix}-${tenant}-${index}`;
        await enqueueSend({ send: queue }, { workflowId, delegationId: 'main.1' }, 0, undefined, 0, { tenant });
        ids.push((await producer.delegate({ agent: agent.cardUrl, text: `${tenant} ${index}`, idempotencyKey: workflowId })).id);
      }
      return ids;
    };
    const ids = [...(await burst('a', 30)), ...(await burst('b', 3))];
    track(await startTestFleet({ redisUrl: redisServer().url, prefix, concurrency: { send: 1 } }));
    await allCompleted(producer, ids, 'all 33 delegations COMPLETED');
    const order = sentTexts(agent);
    expect(order).toHaveLength(33);
    const lastOfA = Math.max(...order.map((text, index) => (text.startsWith('a ') ? index : -1)));
    const positionsOfB = order.map((text, index) => (text.startsWith('b ') ? index : -1)).filter((index) => index >= 0);
    expect(positionsOfB).toHaveLength(3);
    for (const position of positionsOfB) {
      expect(position).toBeLessThan(lastOfA);
      expect(position).toBeLessThanOrEqual(2 * 3);
    }
  }, 180_000);

  it("a tenant's send that the worker enqueues again (the next try after its agent was unreachable) keeps the workflow's tenant in its job data", async () => {
    const prefix = newPrefix('retenant');
    const producer = track(createProducer({ redis: redisServer().url, prefix, tenant: 'acme', addressPolicy: { allowLoopback: true } }));
    // Nothing listens on this port: every try finds the agent unreachable, nothing is sent, a next try is enqueued.
    const agent = `http://127.0.0.1:${await findFreePort()}/.well-known/agent-card.json`;
    const { id } = await producer.delegate({ agent, text: 'to nobody', idempotencyKey: 'unreachable-1' });
    expect(id).toBe('acme~unreachable-1');
    const queue = track(new Queue('send', { connection: new Redis(redisServer().url, { maxRetriesPerRequest: null }), prefix: queuePrefix(prefix) }));
    const seen = new Map<string, unknown>();
    const firstSend = `send|${id}|main.1|0`;
    track(await startTestFleet({ redisUrl: redisServer().url, prefix }));
    await eventually(
      async () => {
        for (const job of await queue.getJobs(['delayed', 'prioritized', 'wait', 'active', 'failed'])) if (job?.id?.startsWith(`send|${id}|`)) seen.set(job.id, job.data);
        return [...seen.keys()].some((jobId) => jobId !== firstSend);
      },
      'a send job of the delegation other than the first',
      60_000,
      50,
    );
    const again = [...seen].filter(([jobId]) => jobId !== firstSend);
    expect(again.length).toBeGreaterThan(0);
    for (const [, data] of again) expect(data).toMatchObject({ workflowId: id, kind: 'message', tenant: 'acme' });
  }, 120_000);

  it("sendOrder-2.lua: a place takes the tenant's weight in sends (the registry's); a cleared weight is 1 from the tenant's place on; a tenant idle while the clock moved on starts at the clock", async () => {
    const redis = new Redis(redisServer().url);
    open.push({ close: () => redis.quit() });
    const prefix = newPrefix('places');
    const registry = new AgentRegistry(redis, { prefix });
    await registry.setTenantWeight('heavy', 2);
    await expect(registry.setTenantWeight('heavy', 0)).rejects.toThrow();
    expect(await registry.tenantWeights()).toEqual({ heavy: 2 });
    const order = new SendOrder(redis, prefix);
    const places = async (tenant: string, count: number) => {
      const seen: number[] = [];
      for (let index = 0; index < count; index++) seen.push(await order.place(tenant));
      return seen;
    };
    expect(await places('heavy', 5)).toEqual([0, 0, 1, 1, 2]);
    expect(await places('light', 3)).toEqual([0, 1, 2]);
    await registry.setTenantWeight('heavy', undefined);
    expect(await places('heavy', 2)).toEqual([3, 4]);
    const shortPrefix = newPrefix('clock');
    const short = new SendOrder(redis, shortPrefix, 200);
    expect(await short.place('a')).toBe(0);
    const [seconds, micros] = await redis.time();
    const from = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    await eventually(async () => {
      const [s2, m2] = await redis.time();
      return Number(s2) * 1000 + Math.floor(Number(m2) / 1000) >= from + 450;
    }, 'two places of the clock went by', 10_000, 20);
    const next = await short.place('a');
    expect(next).toBeGreaterThanOrEqual(2);
    expect(Number(await redis.hget(`${shortPrefix}:{send-order}:clock`, 'v'))).toBe(next);
  });
});
