/**
 * Flow control per agent (docs/flow-control.md): G31 (one agent that holds SendMessage cannot stall the fleet), a
 * fleet-wide `maxInFlight` counted by the agent across two worker processes (one SIGKILLed holding slots), a
 * `Retry-After` that pauses every worker, and a property of the slot script (agentFlow-2.lua).
 */
import { hostname } from 'node:os';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { agentKeyOf } from '@durable-a2a/a2a';
import { AgentFlow, journalKeys } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { eventually, spawnWorkerProcess, startTestFleet, type WorkerProcess } from '../harness/fleet.ts';
import { startScriptedAgent, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';
import { startTaskAgent, type TaskAgentHandle } from '../harness/task-agent.ts';

const redisServer = useRedisServer();
const open: { close(): Promise<unknown> }[] = [];
const processes: WorkerProcess[] = [];
let counter = 0;

afterEach(async () => {
  for (const child of processes.splice(0)) await child.kill('SIGKILL');
  for (const resource of open.splice(0).reverse()) {
    const started = Date.now();
    await resource.close().catch(() => undefined);
    if (process.env.FLOW_DEBUG) console.log('closed', resource.constructor?.name, Date.now() - started);
  }
}, 120_000);

const track = <T extends { close(): Promise<unknown> }>(resource: T): T => (open.push(resource), resource);
const redisClient = (): Redis => {
  const client = new Redis(redisServer().url);
  open.push({ close: () => client.quit() });
  return client;
};
const newPrefix = (name: string) => `flow-${name}-${++counter}-${Date.now()}`;
const producerOf = (prefix: string): Producer => track(createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } }));
const fleetOf = async (prefix: string, options: Parameters<typeof startTestFleet>[0] extends infer O ? Partial<O> : never = {}): Promise<Fleet> =>
  track(await startTestFleet({ redisUrl: redisServer().url, prefix, ...options }));

async function allCompleted(producer: Producer, ids: string[], what: string, timeoutMs: number): Promise<void> {
  await eventually(async () => (await Promise.all(ids.map((id) => producer.get(id)))).every((view) => view.state === 'COMPLETED'), what, timeoutMs, 200);
}

describe('G31: one agent that holds SendMessage cannot take every send slot', () => {
  it('G31: one worker (send concurrency 20), 30 held sends to a bad agent, then 10 to a good one (200 ms tasks): all 10 good ones COMPLETED while the held sends occupy their share', async () => {
    const prefix = newPrefix('g31');
    const bad: ScriptedAgentHandle = track(
      await startScriptedAgent({ SendMessage: () => ({ hang: true }), ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }) }),
    );
    const good: TaskAgentHandle = track(await startTaskAgent({ taskMs: 200 }));
    const producer = producerOf(prefix);
    const fleet = await fleetOf(prefix, { concurrency: { send: 20 }, requestTimeoutMs: 2_000 });
    for (let index = 0; index < 30; index++) await producer.delegate({ agent: bad.cardUrl, text: `held ${index}`, idempotencyKey: `${prefix}-bad-${index}` });
    await eventually(async () => bad.count('SendMessage') >= 10, 'the bad agent holds sends', 30_000);
    const goodIds: string[] = [];
    for (let index = 0; index < 10; index++) goodIds.push((await producer.delegate({ agent: good.cardUrl, text: `good ${index}`, idempotencyKey: `${prefix}-good-${index}` })).id);
    // Sampled while the good ones run. Nobody waited when the bad agent's sends started, so it could take every slot
    // (work-conserving); once its sends are known held (slow) and half the held-send pool holds its sends, it never
    // holds more send slots in jobs than the share rule allows: a tenth of the slots stays free for other agents.
    let mostHeldInJobs = 0;
    let mostHeldInJobsOnceSlow = 0;
    const sampler = setInterval(() => {
      const heldInJobs = fleet.context.sendSlots.heldBy(bad.cardUrl);
      mostHeldInJobs = Math.max(mostHeldInJobs, heldInJobs);
      if (fleet.context.sendSlots.isSlow(bad.cardUrl) && fleet.context.heldSends.heldBy(bad.cardUrl) === 10) mostHeldInJobsOnceSlow = Math.max(mostHeldInJobsOnceSlow, heldInJobs);
    }, 20);
    try {
      await allCompleted(producer, goodIds, 'the 10 good delegations COMPLETED', 60_000);
    } finally {
      clearInterval(sampler);
    }
    expect(good.count('SendMessage')).toBe(10);
    expect(mostHeldInJobs).toBeLessThanOrEqual(20);
    expect(mostHeldInJobsOnceSlow).toBeLessThanOrEqual(18); // 20 slots, a tenth (2) left to other agents while it is slow
    expect(bad.count('SendMessage')).toBeLessThanOrEqual(30); // each held send once: waiting never resends
    // After requestTimeoutMs the held sends wait outside their jobs: half the held-send pool (10 of 20) for this agent.
    await eventually(async () => fleet.context.heldSends.heldBy(bad.cardUrl) === 10, 'held sends moved out of their jobs', 30_000);
    // The held requests end with the agent (a fleet's close waits for requests still in flight on its dispatcher).
    await bad.close();
  }, 120_000);
});

describe('the default send share is work-conserving; an explicit one caps', () => {
  const concurrentSends = async (name: string, options: { sendSlotsPerAgent?: number }): Promise<number> => {
    const prefix = newPrefix(name);
    const agent = track(await startTaskAgent({ taskMs: 50, sendMs: 1_500 }));
    const producer = producerOf(prefix);
    await fleetOf(prefix, { concurrency: { send: 4 }, ...options });
    const ids: string[] = [];
    for (let index = 0; index < 8; index++) ids.push((await producer.delegate({ agent: agent.cardUrl, text: `one ${index}`, idempotencyKey: `${prefix}-${index}` })).id);
    await allCompleted(producer, ids, 'all 8 delegations COMPLETED', 60_000);
    expect(agent.count('SendMessage')).toBe(8);
    return agent.maxConcurrentSends();
  };

  it('one agent alone, send concurrency 4, default share: the agent sees 4 SendMessage at once (all the slots, not half)', async () => {
    expect(await concurrentSends('alone', {})).toBe(4);
  }, 90_000);

  it('one agent alone, send concurrency 4, sendSlotsPerAgent 2: never more than 2 SendMessage at once', async () => {
    const most = await concurrentSends('capped', { sendSlotsPerAgent: 2 });
    expect(most).toBeGreaterThanOrEqual(1);
    expect(most).toBeLessThanOrEqual(2);
  }, 90_000);
});

describe("an agent's maxInFlight, fleet-wide", () => {
  it('two worker processes share maxInFlight 3: the agent never handles 4 SendMessage at once; a worker SIGKILLed holding slots gives them back after the lease and all work completes', async () => {
    const prefix = newPrefix('max');
    const agent = track(await startTaskAgent({ taskMs: 100, sendMs: 1_200 }));
    const producer = producerOf(prefix);
    await producer.registerAgent(agent.cardUrl);
    await producer.setAgentLimits(agent.cardUrl, { maxInFlight: 3 });
    const environment = { REDIS_URL: redisServer().url, DA2A_PREFIX: prefix };
    const [first, second] = [spawnWorkerProcess(environment), spawnWorkerProcess(environment)];
    processes.push(first, second);
    await Promise.all([first.ready, second.ready]);
    const ids: string[] = [];
    for (let index = 0; index < 12; index++) ids.push((await producer.delegate({ agent: agent.cardUrl, text: `limited ${index}`, idempotencyKey: `${prefix}-${index}` })).id);
    const slotsKey = journalKeys(prefix).agentFlow(agentKeyOf(agent.cardUrl)).slots;
    const reader = redisClient();
    const holdersOf = async (child: WorkerProcess) => (await reader.zrange(slotsKey, 0, -1)).filter((holder) => holder.startsWith(`${hostname()}-${child.child.pid}/`));
    await eventually(async () => (await holdersOf(first)).length > 0, 'the first worker holds a slot', 30_000, 20);
    await first.kill('SIGKILL');
    // Its slots come back when their leases end (lockDurationMs), not never.
    await eventually(async () => (await holdersOf(first)).length === 0, "the killed worker's slots come back", 30_000);
    await allCompleted(producer, ids, 'all 12 delegations COMPLETED', 120_000);
    expect(agent.maxConcurrentSends()).toBeGreaterThanOrEqual(2);
    expect(agent.maxConcurrentSends()).toBeLessThanOrEqual(3);
  }, 180_000);
});

describe('Retry-After pauses the agent for the whole fleet', () => {
  it('an agent answering 429 Retry-After: 2 sees no request from any worker for 2 s', async () => {
    const prefix = newPrefix('retry-after');
    const agent = track(await startTaskAgent({ before: (count) => (count === 1 ? { http: { status: 429, body: '{"error":"slow down"}', headers: { 'retry-after': '2' } } } : undefined) }));
    const producer = producerOf(prefix);
    await fleetOf(prefix);
    await fleetOf(prefix, { workerId: `second-${prefix}` });
    const firstId = (await producer.delegate({ agent: agent.cardUrl, text: 'first', idempotencyKey: `${prefix}-0` })).id;
    await eventually(async () => agent.count('SendMessage') >= 1, 'the first SendMessage answered 429');
    const refusedAt = agent.requests[0]!.at;
    const ids = [firstId];
    for (let index = 1; index <= 5; index++) ids.push((await producer.delegate({ agent: agent.cardUrl, text: `next ${index}`, idempotencyKey: `${prefix}-${index}` })).id);
    await allCompleted(producer, ids, 'all six delegations COMPLETED', 60_000);
    const after = agent.requests.slice(1);
    expect(after.length).toBeGreaterThanOrEqual(5);
    // A protocol assertion (what the agent asked for), with 100 ms for its own clock's reading of arrival.
    expect(Math.min(...after.map((request) => request.at)) - refusedAt).toBeGreaterThanOrEqual(2_000 - 100);
  }, 90_000);
});

describe('a pause written by another worker reaches the sends of a worker that skips the look (pauseCheckMs)', () => {
  it('a worker that found the agent unpaused (no limits, pauseCheckMs 300): once its look has lapsed, a pause written elsewhere holds its next sends (waiting for a slot, nothing sent)', async () => {
    const prefix = newPrefix('pause-elsewhere');
    const agent = track(await startTaskAgent({ taskMs: 20 }));
    const producer = producerOf(prefix);
    const fleet = await fleetOf(prefix, { pauseCheckMs: 300 });
    await allCompleted(producer, [(await producer.delegate({ agent: agent.cardUrl, text: 'first', idempotencyKey: `${prefix}-0` })).id], 'the first delegation COMPLETED', 30_000);
    // Another worker's pause, as `pauseForRetryAfter` writes it there.
    const elsewhere = new AgentFlow(redisClient(), prefix);
    await elsewhere.pause(agent.cardUrl, 60_000);
    // The bound: the look taken before the pause lapses by itself (no pause noted here, no Redis command).
    await eventually(async () => !fleet.context.pauseChecks.isClear(agent.cardUrl), "the worker's look lapsed", 10_000, 20);
    const ids: string[] = [];
    for (let index = 1; index <= 3; index++) ids.push((await producer.delegate({ agent: agent.cardUrl, text: `paused ${index}`, idempotencyKey: `${prefix}-${index}` })).id);
    await eventually(
      async () => (await Promise.all(ids.map((id) => producer.get(id)))).every((view) => view.steps[0]!.attempts[0]!.progress === `waiting for a slot at ${agent.cardUrl}`),
      'the three sends wait for the pause',
      30_000,
    );
    expect(agent.count('SendMessage')).toBe(1);
  }, 90_000);
});

describe('agentFlow-2.lua: slots never exceed the limit', () => {
  it('property: random acquire / release / renew / expire sequences of several holders never put more than maxInFlight live holders in the set, and an acquire never goes while the limit is reached', async () => {
    const redis = redisClient();
    const prefix = newPrefix('property');
    const flow = new AgentFlow(redis, prefix);
    let run = 0;
    const operation = fc.oneof(
      fc.record({ op: fc.constant('acquire' as const), holder: fc.integer({ min: 0, max: 6 }), leaseMs: fc.integer({ min: 5, max: 200 }) }),
      fc.record({ op: fc.constant('release' as const), holder: fc.integer({ min: 0, max: 6 }) }),
      fc.record({ op: fc.constant('renew' as const), holder: fc.integer({ min: 0, max: 6 }), leaseMs: fc.integer({ min: 5, max: 200 }) }),
      fc.record({ op: fc.constant('expire' as const), waitMs: fc.integer({ min: 1, max: 40 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.array(operation, { minLength: 1, maxLength: 25 }), async (maxInFlight, operations) => {
        const agent = `http://127.0.0.1:1/agent-${++run}/.well-known/agent-card.json`;
        const slots = journalKeys(prefix).agentFlow(agentKeyOf(agent)).slots;
        for (const step of operations) {
          if (step.op === 'expire') await new Promise((resolve) => setTimeout(resolve, step.waitMs));
          else if (step.op === 'release') await flow.release(agent, `h${step.holder}`);
          else if (step.op === 'renew') await flow.renew(agent, `h${step.holder}`, step.leaseMs);
          else {
            const before = await liveHolders(redis, slots);
            const answer = await flow.acquire(agent, `h${step.holder}`, { maxInFlight }, step.leaseMs);
            if (before.length >= maxInFlight && !before.includes(`h${step.holder}`) && answer.go) {
              // Only a lease that ran out between the read and the script may have made room.
              expect(await liveHolders(redis, slots)).toContain(`h${step.holder}`);
            }
            if (!answer.go) expect(answer.reason).toBe('slots-full');
          }
          expect((await liveHolders(redis, slots)).length).toBeLessThanOrEqual(maxInFlight);
          expect(await redis.zcard(slots)).toBeLessThanOrEqual(maxInFlight);
        }
      }),
      { numRuns: 60 },
    );
  }, 120_000);

  it('every reply: a pause is seen by the next acquire of any holder and never shortened; the rate spaces sends; release and renew of a holder that holds nothing say so', async () => {
    const redis = redisClient();
    const flow = new AgentFlow(redis, newPrefix('replies'));
    const agent = 'http://127.0.0.1:1/replies/.well-known/agent-card.json';
    expect(await flow.acquire(agent, 'a', {}, 1_000)).toEqual({ go: true });
    expect(await flow.pause(agent, 5_000)).toBeGreaterThan(4_900);
    expect(await flow.pause(agent, 10)).toBeGreaterThan(4_800);
    const paused = await flow.acquire(agent, 'b', {}, 1_000);
    expect(paused.go === false && paused.reason === 'paused' && paused.waitMs > 4_000).toBe(true);
    expect(await flow.resubscribeTurn(agent, 0)).toBeGreaterThan(4_000);
    const other = 'http://127.0.0.1:1/other/.well-known/agent-card.json';
    expect(await flow.acquire(other, 'a', { rate: { sendsPerSecond: 2 } }, 1_000)).toEqual({ go: true });
    const spaced = await flow.acquire(other, 'b', { rate: { sendsPerSecond: 2 } }, 1_000);
    expect(spaced.go === false && spaced.reason === 'rate' && spaced.waitMs <= 500).toBe(true);
    // Four a second: the next turn is 250 ms after the first, less what passed between the two asks (measured, so a
    // loaded machine that takes longer between them does not fail the test).
    const firstAskedAt = Date.now();
    expect(await flow.resubscribeTurn(other, 4)).toBe(0);
    const nextTurnMs = await flow.resubscribeTurn(other, 4);
    const elapsedMs = Date.now() - firstAskedAt;
    expect(nextTurnMs).toBeLessThanOrEqual(250);
    expect(nextTurnMs).toBeGreaterThanOrEqual(Math.max(0, 250 - elapsedMs - 5));
    if (elapsedMs < 200) expect(nextTurnMs).toBeGreaterThan(0);
    expect(await flow.release(other, 'nobody')).toBe(false);
    expect(await flow.renew(other, 'nobody', 1_000)).toBe(false);
    expect(await flow.acquire(other, 'c', { maxInFlight: 1 }, 1_000).then((answer) => answer.go || answer.reason)).toBeTruthy();
  });
});

/** Holders whose lease has not ended, on Redis's clock. */
async function liveHolders(redis: Redis, key: string): Promise<string[]> {
  const [seconds, micros] = await redis.time();
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  return redis.zrangebyscore(key, `(${now}`, '+inf');
}
