/**
 * A followed stream's WORKING that changes nothing else waits `workingWriteDelayMs` for the status that replaces it
 * (`delegation/runs/working-write.ts`), end to end: producer → fleet → a real @a2a-js/sdk agent → journal, the
 * script calls counted with MONITOR. An agent that works 50 ms after the follow subscribed: its WORKING snapshot is
 * never journaled (one applyStatus fewer than with the window at 0, the row SUBMITTED → COMPLETED). An agent that
 * stays WORKING past the window: WORKING is journaled (the agent goes on only once the journal shows it). A fleet
 * that closes while a WORKING waits writes it before the stream is handed over.
 */
import { describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import type { Step } from '@durable-a2a/testing';
import { scriptSha } from '../../packages/shared/src/journal/scripts.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startMonitor, testsOnCluster, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
let producer: Producer | undefined;
let fleet: Fleet | undefined;
let agent: DemoAgentHandle | undefined;
let counter = 0;
closeAfterEach(
  () => ({ fleet, agent, producer }),
  () => void (fleet = agent = producer = undefined),
);

/** Waits (bounded, polling) until `check` holds: an agent's step that goes on only once the test's condition is met. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await eventually(async () => (await check()) || undefined, what, 30_000, 10);
}

/** WORKING, then `wait`, then `workMs` of work, an artifact and COMPLETED. */
const working = (wait: () => Promise<void>, workMs: number): Step[] => [
  { state: 'WORKING' },
  { sideEffect: wait },
  ...(workMs > 0 ? [{ delayMs: workMs }] : []),
  { artifact: { artifactId: 'result', text: 'booked', lastChunk: true } },
  { state: 'COMPLETED' },
];

/** The transitions the fleet journaled into `state` (the metric, every source and agent). */
async function transitionsInto(of: Fleet, state: string): Promise<number> {
  return (await of.metrics.transitions.get()).values.filter((value) => value.labels.state === state).reduce((sum, value) => sum + value.value, 0);
}

/** Runs one delegation against the agent with `steps` on a fresh prefix; applyStatus calls (all, and WORKING ones) counted. */
async function delegateOnce(delayMs: number, steps: (id: () => string) => Step[]): Promise<{ applyStatus: number; workingWrites: number; workingTransitions: number; id: string }> {
  const prefix = `working-write-${++counter}`;
  let id = '';
  agent = await startDemoAgent({ behaviour: () => steps(() => id) });
  producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, workingWriteDelayMs: delayMs });
  const monitor = await startMonitor(redisServer().url);
  const sha = scriptSha('applyStatus');
  let applyStatus = 0;
  let workingWrites = 0;
  monitor.on('monitor', (_time: string, args: string[]) => {
    if ((args[0] ?? '').toLowerCase() !== 'evalsha' || args[1] !== sha || !(args[3] ?? '').startsWith(`${prefix}:`)) return;
    applyStatus++;
    // ARGV[4] (the journal state) after the 5 keys.
    if (args[3 + 5 + 3] === 'WORKING') workingWrites++;
  });
  try {
    ({ id } = await producer.delegate({ agent: agent.cardUrl, text: 'book it', idempotencyKey: `${prefix}-k` }));
    expect((await producer.waitFor(id, { timeoutMs: 30_000 })).state).toBe('COMPLETED');
    return { applyStatus, workingWrites, workingTransitions: await transitionsInto(fleet, 'TASK_STATE_WORKING'), id };
  } finally {
    monitor.disconnect();
    await fleet.close();
    await agent.close();
    await producer.close();
    fleet = agent = producer = undefined;
  }
}

describe.skipIf(testsOnCluster())('a followed WORKING waits for the status that replaces it', () => {
  it('an agent working 50 ms after the follow subscribed: its WORKING is never journaled, one applyStatus fewer than writing at once', async () => {
    // The agent is WORKING when the follow subscribes (its first snapshot says so), then works 50 ms and completes.
    const afterSubscription = (): Step[] => working(() => until(() => (agent?.requestCount('SubscribeToTask') ?? 0) >= 1, 'the follow subscribed'), 50);
    const atOnce = await delegateOnce(0, afterSubscription);
    // A window far above the 50 ms, so that the completion arrives inside it on a loaded machine too.
    const held = await delegateOnce(10_000, afterSubscription);
    expect([atOnce.workingWrites, atOnce.workingTransitions]).toEqual([1, 1]);
    expect([held.workingWrites, held.workingTransitions]).toEqual([0, 0]);
    expect(held.applyStatus).toBe(atOnce.applyStatus - 1);
  }, 120_000);

  it('an agent that stays WORKING past the window: WORKING is journaled, then COMPLETED', async () => {
    // The agent goes on only once the journal shows WORKING: written when the window (200 ms) ended.
    const untilJournaled = (id: () => string): Step[] =>
      working(() => until(async () => (await producer?.journal.getDelegation({ workflowId: id(), delegationId: 'main.1' }))?.state === 'WORKING', 'WORKING journaled'), 0);
    const held = await delegateOnce(200, untilJournaled);
    expect([held.workingWrites, held.workingTransitions]).toEqual([1, 1]);
  }, 120_000);

  it('the fleet closes while a WORKING waits: it is written before the stream is handed over', async () => {
    const prefix = `working-write-${++counter}`;
    let released = false;
    agent = await startDemoAgent({
      behaviour: () => [
        { state: 'WORKING' },
        { sideEffect: () => until(() => (agent?.requestCount('SubscribeToTask') ?? 0) >= 1, 'the follow subscribed') },
        // An artifact after the snapshot: once it is journaled, the stream's WORKING before it is held.
        { artifact: { artifactId: 'draft', text: 'half', lastChunk: false } },
        { sideEffect: () => until(() => released, 'the test released the agent') },
        { state: 'COMPLETED' },
      ],
    });
    producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, workingWriteDelayMs: 60_000 });
    try {
      const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book it', idempotencyKey: `${prefix}-k` });
      const ref = { workflowId: id, delegationId: 'main.1' };
      await eventually(async () => ((await producer!.journal.getDelegationView(ref))?.artifacts.length ?? 0) > 0, 'the artifact journaled', 30_000);
      expect((await producer.journal.getDelegation(ref))?.state).toBe('SUBMITTED');
      await fleet.close();
      fleet = undefined;
      expect((await producer.journal.getDelegation(ref))?.state).toBe('WORKING');
    } finally {
      released = true;
    }
  }, 120_000);
});
