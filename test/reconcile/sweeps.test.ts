/**
 * Field cases end to end — The reconcile sweep: one scheduler across restarts and deploys, overlapping sweeps and closes (R22).
 * Producer → fleet → a scripted raw JSON-RPC agent → journal; each `describe` names its case id
 * (docs/field-cases.md says what each proves); the case's "Expected" is the assertion.
 */
import { describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { createRedisClient, queuePrefix } from '@durable-a2a/shared';
import { eventually } from '../harness/fleet.ts';
import {
  finished,
  recordOf,
  ref,
  sleep,
  useFieldCases,
  type Setup,
} from '../harness/field-cases.ts';
import {
  task,
  taskEvent,
} from '../harness/scripted-agent.ts';

const h = useFieldCases();

describe('R22: repeatable sweeper jobs multiply after restarts or deploys', () => {
  /** A fresh prefix, an agent whose task T1 stays WORKING (its stream hangs open, GetTask answers WORKING) and a producer. */
  async function setUpWorkingTask() {
    const prefix = h.newPrefix();
    const seen: Setup['seen'] = {};
    const agent = await h.agentWith({
      SendMessage: h.accept(seen),
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId }))], endAfter: 'hang' }),
      GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId }) }),
    });
    return { prefix, agent, producer: h.producer(prefix) };
  }

  async function sweepSchedulers(prefix: string) {
    const connection = createRedisClient(h.redisServer().url);
    const queue = new Queue('reconcile', { connection, prefix: queuePrefix(prefix) });
    try {
      const schedulers = await queue.getJobSchedulers();
      const jobs = await queue.getJobs(['delayed', 'waiting', 'prioritized', 'wait']);
      const instances = jobs.filter((job) => job && job.repeatJobKey === 'reconcile-sweep');
      return { schedulers, instances };
    } finally {
      await queue.close();
      await connection.quit();
    }
  }

  it('four restarts at 60 s, then a deploy at 30 s: always exactly one "reconcile-sweep" scheduler, with the latest interval', async () => {
    const prefix = h.newPrefix();
    const intervals = [60_000, 60_000, 60_000, 60_000, 30_000];
    for (const interval of intervals) {
      const fleet = await h.fleetFor(prefix, { reconcileIntervalMs: interval });
      const { schedulers, instances } = await sweepSchedulers(prefix);
      expect(schedulers).toHaveLength(1);
      const scheduler = schedulers[0]! as { key?: string; id?: string; every?: number | string };
      expect(scheduler.id ?? scheduler.key).toBe('reconcile-sweep');
      expect(Number(scheduler.every)).toBe(interval);
      expect(instances.length).toBeLessThanOrEqual(1);
      await fleet.close(); // idempotent: the harness's teardown closing it again is harmless
    }
  });

  it('two overlapping sweeps on two fleets never open a second subscription for one task', async () => {
    const { prefix, agent, producer } = await setUpWorkingTask();
    const first = await h.fleetFor(prefix, { reconcileIntervalMs: 60_000, streamIdleTimeoutMs: 60_000, workerId: 'fleet-a' });
    const second = await h.fleetFor(prefix, { reconcileIntervalMs: 60_000, streamIdleTimeoutMs: 60_000, workerId: 'fleet-b' });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'long', idempotencyKey: 'r22-long' });
    await eventually(async () => agent.count('SubscribeToTask') === 1 && (await producer.journal.isFollowed(ref(id))), 'stream open');
    await Promise.all([first.sweepAll(), second.sweepAll(), first.sweepAll(), second.sweepAll()]);
    await sleep(2_500);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    expect((await recordOf(producer, id))!.state).toBe('WORKING');
    // End the agent first: closing two fleets around an open stream is the next test.
    await agent.close();
  });

  it('frequent sweeps while first sends are in flight never discard an agent\'s answer (no AMBIGUOUS for a healthy agent)', async () => {
    const prefix = h.newPrefix();
    // A healthy agent that cannot list tasks (like a 0.3 agent): a discarded SendMessage answer cannot be recovered.
    const agent = await h.agentWith({
      SendMessage: async (params, call) => {
        await sleep(5);
        return { result: { task: task(`T${call.count}`, 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'ok' } }) } };
      },
    });
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, { reconcileIntervalMs: 50 });
    const started = await Promise.all(Array.from({ length: 200 }, (_, index) => producer.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `sweep-race-${index}` })));
    const states = await Promise.all(started.map(async ({ id }) => (await finished(producer, id, 30_000)).state));
    expect(states.filter((state) => state !== 'COMPLETED')).toEqual([]);
    expect(agent.count('SendMessage')).toBe(200);
  });

  it('closing two fleets that share a followed task: bounded close, no subscription opened by a closing fleet', async () => {
    const { prefix, agent, producer } = await setUpWorkingTask();
    const options = { reconcileIntervalMs: 60_000, streamIdleTimeoutMs: 8_000, closeTimeoutMs: 2_000 };
    const first = await h.fleetFor(prefix, { ...options, workerId: 'fleet-a' });
    const second = await h.fleetFor(prefix, { ...options, workerId: 'fleet-b' });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'long', idempotencyKey: 'r22-close' });
    await eventually(async () => agent.count('SubscribeToTask') === 1 && (await producer.journal.isFollowed(ref(id))), 'stream open');
    const closing = Date.now();
    await Promise.all([first.close(), second.close()]);
    const elapsed = Date.now() - closing;
    expect(agent.calls('SubscribeToTask').filter((call) => call.at >= closing)).toHaveLength(0);
    expect(elapsed).toBeLessThan(options.closeTimeoutMs + 2_000);
  });
});
