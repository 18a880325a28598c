/**
 * The follow lease given back by the stream's finishing status change (applyStatus-5.lua, `endsLease`), raced by
 * the fleet's renewal tick (lease-1.lua `keep`: a lease that ran out and that nobody took since is taken back).
 * A tick issued while that change is on its way reaches Redis after it, finds the lease gone and takes it back:
 * the holder must then give it back itself, or a finished delegation stays "followed" for `lockDurationMs`.
 * Redis holds the change (CLIENT PAUSE WRITE) until a renewal tick has certainly been issued behind it.
 */
import { describe, expect, it } from 'vitest';
import { finished, metric, useFieldCases, workflowSettled } from '../harness/field-cases.ts';
import { useRedisClient } from '../harness/redis.ts';
import { task, taskEvent } from '../harness/scripted-agent.ts';
import { eventually } from '../harness/fleet.ts';

const h = useFieldCases();
/** Renewal ticks every LEASE_MS / 3; the pause spans at least two of them. The lease taken back lives LEASE_MS. */
const LEASE_MS = 3_000;
const PAUSE_MS = 2_500;
const pauser = useRedisClient(h.redisServer);

describe('the follow lease ended by the finishing status change, with a renewal tick in flight', () => {
  it('a renewal issued behind the finishing change does not leave the finished delegation leased', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: async () => {
          // Writes wait from here on: the finishing change below, then the renewal ticks issued meanwhile.
          await pauser().call('CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE');
          return { sse: [taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'done' } }))], endAfter: 'hang' };
        },
      }),
      { lockDurationMs: LEASE_MS, reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'lease race', idempotencyKey: 'lease-race' });
    expect((await finished(p, id)).state).toBe('COMPLETED');
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
    // The follow is over (no local follow, no follow job running): whatever it held is given back by now.
    const followsRunning = async () => (await metric(fleet.metrics.localFollows)) + ((await fleet.context.queues.follow.getJobCounts('active')).active ?? 0);
    await eventually(async () => (await followsRunning()) === 0, 'the follow ended', 10_000);
    const leaseKey = p.journal.keys.followLease(id, 'main.1');
    expect(await pauser().get(leaseKey), `lease held with ${await pauser().pttl(leaseKey)} ms left`).toBeNull();
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
  }, 30_000);

  it('a snapshot over the artifact limit finishes the row (AMBIGUOUS, LIMIT_EXCEEDED: the agent produced output, a person decides): the stream is closed and settled at once, the lease given back', async () => {
    // Long idle watchdog and reconcile interval: only the stream's own routing can settle the workflow within the wait below.
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, artifacts: { a1: 'x'.repeat(4_000) } }))], endAfter: 'hang' }),
      }),
      { artifactBytesPerDelegation: 1_000, streamIdleTimeoutMs: 60_000, reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'over the limit', idempotencyKey: 'over-limit' });
    const record = await finished(p, id);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'artifactBytesPerDelegation', delivery: 'received' });
    expect((await workflowSettled(p, id, 10_000)).state).not.toBe('RUNNING');
    const followsRunning = async () => (await metric(fleet.metrics.localFollows)) + ((await fleet.context.queues.follow.getJobCounts('active')).active ?? 0);
    await eventually(async () => (await followsRunning()) === 0, 'the follow ended', 10_000);
    expect(await pauser().get(p.journal.keys.followLease(id, 'main.1'))).toBeNull();
    expect(agent.count('SubscribeToTask')).toBe(1);
  }, 30_000);
});
