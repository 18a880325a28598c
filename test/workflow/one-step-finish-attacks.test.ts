/**
 * Attacks on the one-step finish with a real fleet (finishStep-5.lua through the follow): what the worker does
 * after the script must equal what it does after the two calls, metrics included. The end-to-end duration of a
 * delegation (`durable_a2a_delegation_duration_seconds`) is observed exactly once, whatever writes the unfinished
 * index afterwards: a reconcile that read the row before the finish writes its next check a moment after the script's
 * ZREM (with a plain ZADD the entry came back, and the reconciler settled the finished delegation again).
 * The worker's checks only move an entry (`scheduleCheck` is ZADD XX), so it does not come back and the duration
 * stays observed once. And the metrics of a one-step workflow finished in one script equal those of the two calls
 * (the duration's count included): the same delegation finished with its follow in a process that did not send it
 * (no workflow row remembered: the two calls run).
 */
import { describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { completesWith, fails, type Behaviour } from '@durable-a2a/testing';
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

/** Observations of the delegation duration histogram, summed over its labels. */
async function durationsObserved(of: Fleet): Promise<number> {
  const metric = await of.metrics.delegationDuration.get();
  return metric.values.filter((value) => value.metricName?.endsWith('_count')).reduce((sum, value) => sum + value.value, 0);
}

describe.skipIf(testsOnCluster())('the one-step finish under attack, end to end', () => {
  it("a reconcile's stale check does not put the finished delegation's index entry back: nothing is settled again, the duration stays observed once", async () => {
    const prefix = `one-step-attack-${++counter}`;
    agent = await startDemoAgent({ behaviour: completesWith('booked', { delayMs: 100 }) });
    producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book it', idempotencyKey: `${prefix}-k` });
    expect((await producer.waitFor(id, { timeoutMs: 30_000 })).state).toBe('COMPLETED');
    await eventually(async () => (await producer!.journal.unfinishedCount()) === 0, 'index drained', 20_000);
    await eventually(async () => (await durationsObserved(fleet!)) === 1, 'the duration observed', 20_000);

    // What a reconcile that read the row before the finish writes after it: its next check (scheduleCheck).
    const ref = { workflowId: id, delegationId: 'main.1' };
    await producer.journal.scheduleCheck(ref, Date.now() - 1_000);
    expect(await producer.journal.unfinishedCount()).toBe(0);
    await fleet.sweepAll();
    expect(await durationsObserved(fleet)).toBe(1);
    expect((await fleet.metrics.workflowsFinished.get()).values.reduce((sum, value) => sum + value.value, 0)).toBe(1);
    expect((await producer.get(id)).state).toBe('COMPLETED');
  }, 60_000);
});

/** Every sample of the counters and histogram counts that a delegation's end moves, by name and labels (the `agent` label dropped: its port differs). */
async function endMetrics(fleets: readonly Fleet[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const fleet of fleets) {
    for (const metric of [fleet.metrics.transitions, fleet.metrics.workflowsFinished, fleet.metrics.staleObservations, fleet.metrics.delegationDuration, fleet.metrics.adoptions, fleet.metrics.resends]) {
      const { name, values } = await metric.get();
      for (const value of values as { metricName?: string; labels: Record<string, string | number>; value: number }[]) {
        if (value.metricName?.endsWith('_bucket') || value.metricName?.endsWith('_sum')) continue;
        const { agent: _agent, ...labels } = value.labels;
        const key = `${value.metricName ?? name}${JSON.stringify(labels)}`;
        out[key] = (out[key] ?? 0) + value.value;
      }
    }
  }
  return Object.fromEntries(Object.entries(out).filter(([, value]) => value !== 0).sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe.skipIf(testsOnCluster())('the one-step finish against the two calls, end to end', () => {
  const cases: { name: string; behaviour: Behaviour; state: string }[] = [
    { name: 'COMPLETED', behaviour: completesWith('booked', { delayMs: 150 }), state: 'COMPLETED' },
    { name: 'FAILED', behaviour: fails('no seats left'), state: 'FAILED' },
  ];
  for (const { name, behaviour, state } of cases) {
    it(`${name}: the transitions, the finished workflow, the duration observed and nothing stale are the same in one script as in two calls`, async () => {
      const runs: Record<string, number>[] = [];
      const finishSteps: number[] = [];
      for (const split of [false, true]) {
        const prefix = `one-step-vs-two-${++counter}`;
        let calls = 0;
        const monitor = await startMonitor(redisServer().url);
        const shas = [scriptSha('finishStep'), scriptSha('applyArtifactThenFinishStep')];
        monitor.on('monitor', (_time: string, args: string[]) => {
          if ((args[0] ?? '').toLowerCase() === 'evalsha' && shas.includes(args[1]!) && (args[3] ?? '').startsWith(`${prefix}:`)) calls++;
        });
        agent = await startDemoAgent({ behaviour });
        producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
        // Split: the send in one process, the follow (and the settle) in another, which never read the workflow row.
        const fleets = split
          ? [await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['send'], localFollowSlots: 0 }), await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['follow', 'reconcile', 'verify', 'compensate', 'notify'] })]
          : [await startTestFleet({ redisUrl: redisServer().url, prefix })];
        try {
          const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book it', idempotencyKey: `${prefix}-k` });
          expect((await producer.waitFor(id, { timeoutMs: 30_000 })).state).toBe(state);
          await eventually(async () => (await producer!.journal.unfinishedCount()) === 0, 'index drained', 20_000);
          await eventually(async () => (await durationsObserved(fleets[fleets.length - 1]!)) + (split ? await durationsObserved(fleets[0]!) : 0) >= 1, 'the duration observed', 20_000);
          runs.push(await endMetrics(fleets));
          finishSteps.push(calls);
        } finally {
          monitor.disconnect();
          for (const fleet of fleets) await fleet.close();
          await agent.close();
          await producer.close();
          agent = producer = undefined;
        }
      }
      // The path each took: one script alone, the two calls split.
      expect(finishSteps).toEqual([1, 0]);
      // Every count is equal, the duration observed exactly once on either path.
      expect(runs[0]).toEqual(runs[1]);
      expect(Object.entries(runs[0]!).filter(([key]) => key.startsWith('durable_a2a_delegation_duration_seconds_count'))).toEqual([[`durable_a2a_delegation_duration_seconds_count{"state":"${state}"}`, 1]]);
    }, 120_000);
  }
});
