/**
 * A count (docs/performance.md, "The send queue's BullMQ costs"): how often the send queue's finishes ask BullMQ for
 * the next job in the same script (moveToFinished's fetch), in a real fleet with a real agent on a private
 * redis-server, counted with MONITOR. Delegations run one after the other, so a send's finish never finds a next
 * send waiting: before, every finish asked and found none (one fetch of six commands for nothing per send); now only
 * every eighth asks once one has found none (`NextJobGuess`). Fetches are counted by the ZPOPMIN of the prioritized
 * set each one makes (message sends are prioritized, the wait list is empty); the worker's own fetches are its
 * moveToActive calls (EVALSHA or EVAL with 11 keys), so the finishes' are the rest. And the other way: sends that wait for
 * a free slot (a backlog) are still fetched by the finish before them, as BullMQ does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { queuePrefix } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer, testsOnCluster, startMonitor } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';

const DELEGATIONS = 16;
/** `NextJobGuess`'s default: after a finish that found none, one finish in this many asks. */
const PROBE_EVERY = 8;
/** moveToActive-11.lua's key count (moveToFinished-14.lua, the finish, has 14; both name the wait list first). */
const MOVE_TO_ACTIVE_KEYS = '11';

const redisServer = useRedisServer();
let agent: DemoAgentHandle;
let producer: Producer;
let fleet: Fleet;
const prefix = `fetches-${Date.now()}`;

beforeAll(async () => {
  agent = await startDemoAgent();
  producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 60_000, lockDurationMs: 60_000 });
});

afterAll(async () => {
  await fleet?.close();
  await producer?.close();
  await agent?.close();
});

/** Counts the send queue's fetches under MONITOR: each fetch's ZPOPMIN, the worker's moveToActive calls, the finishes. */
async function countFetches(work: () => Promise<unknown>, finished: number): Promise<{ askedByFinishes: number; moveToActive: number; finishes: number }> {
  const send = `${queuePrefix(prefix)}:send`;
  const monitor = await startMonitor(redisServer().url);
  let fetches = 0;
  let moveToActive = 0;
  let finishes = 0;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const command = (args[0] ?? '').toLowerCase();
    if (command === 'zpopmin' && args[1] === `${send}:prioritized` && source.includes('lua')) fetches++;
    // EVAL the first time a connection calls a script (ioredis), EVALSHA after.
    if ((command === 'evalsha' || command === 'eval') && args[3] === `${send}:wait`) {
      if (args[2] === MOVE_TO_ACTIVE_KEYS) moveToActive++;
      else finishes++;
    }
  });
  try {
    await work();
    // Every finish seen (each send's moveToFinished): MONITOR is behind the replies by at most a round trip.
    await eventually(async () => finishes >= finished, `every send finished under MONITOR (${finishes} of ${finished}, ${moveToActive} moveToActive, ${fetches} fetches)`);
  } finally {
    monitor.disconnect();
  }
  return { askedByFinishes: fetches - moveToActive, moveToActive, finishes };
}

async function delegate(count: number, tag: string): Promise<void> {
  for (let index = 0; index < count; index++) {
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'do the thing', idempotencyKey: `${tag}-${index}` });
    await eventually(async () => (await producer.get(id)).state === 'COMPLETED', `${id} completed`);
  }
}

describe.skipIf(testsOnCluster())("the send queue's fetches of the next job", () => {
  it(`sends one after the other: at most one finish in ${PROBE_EVERY} asks BullMQ for the next job`, async () => {
    await delegate(2, 'warm');
    const { askedByFinishes, moveToActive, finishes } = await countFetches(() => delegate(DELEGATIONS, 'counted'), DELEGATIONS);
    console.log(`send queue, ${DELEGATIONS} sequential delegations: ${finishes} finishes, ${askedByFinishes} asked for the next job, ${moveToActive} moveToActive`);
    expect(finishes).toBe(DELEGATIONS);
    expect(askedByFinishes).toBeLessThanOrEqual(Math.ceil(DELEGATIONS / PROBE_EVERY) + 1);
  });

  it('a backlog of sends (one send slot, sends added before the worker starts): every finish but the last fetches the next', async () => {
    await fleet.close();
    const ids = await Promise.all(Array.from({ length: DELEGATIONS }, (_, index) => producer.delegate({ agent: agent.cardUrl, text: 'do the thing', idempotencyKey: `backlog-${index}` })));
    const { askedByFinishes, moveToActive, finishes } = await countFetches(async () => {
      fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 60_000, lockDurationMs: 60_000, concurrency: { send: 1 } });
      for (const { id } of ids) await eventually(async () => (await producer.get(id)).state === 'COMPLETED', `${id} completed`);
    }, DELEGATIONS);
    console.log(`send queue, a backlog of ${DELEGATIONS}: ${finishes} finishes, ${askedByFinishes} asked for the next job, ${moveToActive} moveToActive`);
    expect(finishes).toBe(DELEGATIONS);
    expect(askedByFinishes).toBeGreaterThanOrEqual(DELEGATIONS - 1);
  });
});
