/**
 * Attacks on the hand-over of local follows (delegation/follow-local.ts, fleet close) when Redis misbehaves
 * at the same time: a close while Redis is paused past the close timeout, and a close while Redis is down
 * (killed, then restarted from its AOF). Every delegation still finishes, with one SendMessage each.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { queuePrefix, type DelegationRef } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { testsOnCluster, useRedisClient, useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startScriptedAgent, task, taskEvent } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer({ appendOnly: true, appendFsync: 'always' });
const client = useRedisClient<Redis>(redisServer, { close: 'disconnect', ignoreErrors: true });
let producer: Producer | undefined;
let agent: DemoAgentHandle | undefined;
const fleets: Fleet[] = [];
let counter = 0;

afterEach(async () => {
  await Promise.all(fleets.splice(0).map((fleet) => fleet.close()));
  await agent?.close();
  await producer?.close();
  agent = undefined;
  producer = undefined;
});

/** `count` delegations to a slow agent, each followed locally (its lease held) by a first fleet. */
async function inFlight(count: number, workMs: number) {
  const prefix = `attack-close-${++counter}`;
  agent = await startDemoAgent({ behaviour: runsSlowly(workMs) });
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  const first = await startTestFleet({ redisUrl: redisServer().url, prefix });
  const sent = await Promise.all(Array.from({ length: count }, (_, index) => producer!.delegate({ agent: agent!.cardUrl, text: `job ${index}`, idempotencyKey: `job-${index}` })));
  const refs: DelegationRef[] = sent.map(({ id }) => ({ workflowId: id, delegationId: 'main.1' }));
  // Every stream open under a lease, each in a local follow (a lease held during the SendMessage alone is the send's).
  await eventually(async () => (await first.metrics.localFollows.get()).values[0]!.value === count, 'every delegation followed locally', 20_000);
  await eventually(async () => (await Promise.all(refs.map((ref) => producer!.journal.followLeaseRemainingMs(ref)))).every((ms) => ms > 0), 'every stream open under a lease', 20_000);
  return { prefix, first, sent };
}

/** A second fleet finishes every delegation; each messageId reached the agent once. */
async function finishedOnce(prefix: string, sent: { id: string; messageId?: string }[]) {
  fleets.push(await startTestFleet({ redisUrl: redisServer().url, prefix }));
  for (const { id } of sent) await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', `workflow ${id} COMPLETED`, 30_000);
  for (const { messageId } of sent) expect(agent!.sendMessageCount(messageId!)).toBe(1);
}

describe.skipIf(testsOnCluster())('closing a fleet with local follows while Redis misbehaves', () => {
  it('Redis paused (CLIENT PAUSE ALL) past the close timeout during the hand-over: every delegation finishes, one SendMessage each', async () => {
    const { prefix, first, sent } = await inFlight(8, 4_000);
    await client().call('CLIENT', 'PAUSE', '3000', 'ALL');
    await first.close();
    await finishedOnce(prefix, sent);
  }, 60_000);

  it('Redis refusing every write (OOM) while the tasks finish: local follows fail, their retry jobs cannot be enqueued; once it accepts writes again every delegation finishes, one SendMessage each', async () => {
    const { first, sent } = await inFlight(8, 1_500);
    fleets.push(first);
    await client().config('SET', 'maxmemory', '1');
    try {
      // The agent finishes every task meanwhile: each stream's terminal event meets a refused write, which the fleet's
      // refusal gate holds back (backing off) rather than failing at once.
      const refusals = async () => (await first.metrics.redisRefusals.get()).values.reduce((sum, sample) => sum + sample.value, 0);
      await eventually(async () => (await refusals()) > 0, 'the fleet met refused writes', 20_000);
      // Several backoff rounds of refusals (each round one probe write): the 1.5 s tasks finish meanwhile.
      const refusedAtFirst = await refusals();
      await eventually(async () => (await refusals()) >= refusedAtFirst + 4, 'refusals over several backoff rounds', 30_000);
    } finally {
      await client().config('SET', 'maxmemory', '0');
    }
    for (const { id } of sent) await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', `workflow ${id} COMPLETED`, 30_000);
    for (const { messageId } of sent) expect(agent!.sendMessageCount(messageId!)).toBe(1);
  }, 60_000);

  it('Redis paused past every follow lease while two fleets run: each stream continues or is taken over once, one SendMessage and one terminal transition each', async () => {
    const { prefix, first, sent } = await inFlight(8, 3_000);
    const second = await startTestFleet({ redisUrl: redisServer().url, prefix });
    fleets.push(first, second);
    await client().call('CLIENT', 'PAUSE', '3000', 'ALL');
    for (const { id } of sent) await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', `workflow ${id} COMPLETED`, 30_000);
    for (const { messageId } of sent) expect(agent!.sendMessageCount(messageId!)).toBe(1);
    const terminal = async (fleet: Fleet) => (await fleet.metrics.transitions.get()).values.filter((value) => value.labels.state === 'TASK_STATE_COMPLETED').reduce((sum, value) => sum + value.value, 0);
    expect((await terminal(first)) + (await terminal(second))).toBe(sent.length);
  }, 60_000);

  it('Redis refusing writes while the fleet closes: failed local follows cannot enqueue their retry nor hand over; a second fleet finishes every delegation, one SendMessage each', async () => {
    const { prefix, first, sent } = await inFlight(8, 1_500);
    await client().config('SET', 'maxmemory', '1');
    try {
      await first.close();
    } finally {
      await client().config('SET', 'maxmemory', '0');
    }
    await finishedOnce(prefix, sent);
  }, 60_000);

  it('Redis killed during the local follows, the fleet closed meanwhile, Redis restarted from its AOF: every delegation finishes, one SendMessage each', async () => {
    const { prefix, first, sent } = await inFlight(8, 4_000);
    await redisServer().kill();
    await first.close();
    await redisServer().restart();
    await finishedOnce(prefix, sent);
  }, 60_000);
});

describe.skipIf(testsOnCluster())('close() with Redis down and a job still running', () => {
  it('returns within its bound (the job is abandoned to the stalled-job check); after Redis returns the delegation finishes with one SendMessage', async () => {
    const prefix = `attack-close-${++counter}`;
    const scripted = await startScriptedAgent({
      // The agent holds the send (V2): the send job is still active when Redis goes away.
      SendMessage: async (params) => {
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        return { result: { task: task('T1', 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } };
      },
      ListTasks: (params) => ({ result: { tasks: [task('T1', 'COMPLETED', { contextId: params.contextId, history: [{ messageId: sentMessageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }], artifacts: { a1: 'done' } })], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { artifacts: { a1: 'done' } }) }),
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'COMPLETED', { artifacts: { a1: 'done' } }))], endAfter: 'close' }),
    });
    let sentMessageId = '';
    try {
      producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
      const first = await startTestFleet({ redisUrl: redisServer().url, prefix });
      const { id, messageId } = await producer.delegate({ agent: scripted.cardUrl, text: 'go', idempotencyKey: 'held-send' });
      sentMessageId = messageId!;
      await eventually(async () => scripted.count('SendMessage') === 1, 'the send is held by the agent');
      await redisServer().kill();
      const closed = await Promise.race([first.close().then(() => 'closed'), new Promise((resolve) => setTimeout(resolve, 20_000, 'still closing'))]);
      expect(closed).toBe('closed');
      await redisServer().restart();
      fleets.push(await startTestFleet({ redisUrl: redisServer().url, prefix }));
      await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', 'workflow COMPLETED', 30_000);
      expect(scripted.count('SendMessage')).toBe(1);
    } finally {
      await scripted.close();
    }
  }, 60_000);
});

describe('a process that does not work the follow queue', () => {
  it('sends without local follows (follow jobs for a follow-only process); every delegation finishes, one SendMessage each', async () => {
    const prefix = `attack-close-${++counter}`;
    agent = await startDemoAgent({ behaviour: runsSlowly(300) });
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const sender = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['send', 'reconcile', 'verify', 'compensate'] });
    const follower = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['follow'] });
    fleets.push(sender, follower);
    expect(sender.context.options.localFollowSlots).toBe(0);
    expect(follower.context.options.localFollowSlots).toBeGreaterThan(0);
    const sent = await Promise.all(Array.from({ length: 6 }, (_, index) => producer!.delegate({ agent: agent!.cardUrl, text: `job ${index}`, idempotencyKey: `split-${index}` })));
    for (const { id } of sent) await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', `workflow ${id} COMPLETED`, 30_000);
    for (const { messageId } of sent) expect(agent!.sendMessageCount(messageId)).toBe(1);
    expect(Number((await client().get(`${queuePrefix(prefix)}:follow:id`)) ?? 0)).toBeGreaterThanOrEqual(6);
  }, 60_000);
});
