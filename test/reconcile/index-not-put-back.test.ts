/**
 * The kind "a worker's next check puts a settled delegation back in the unfinished index": a worker that read a row
 * while it was unfinished (a reconcile, the sweep, a follow, the executor's routing) writes the next check after the
 * workflow settled the delegation and dropped its entry. With a plain ZADD the entry came back, and the reconciler
 * settled the finished workflow a second time (one more updateWorkflow, a second observation of its duration). A
 * worker's check only moves an entry (`scheduleCheck`, ZADD XX); only a new intent and a person's resolution add one
 * (`addToIndex`). Real Redis, the real scripts, a real fleet and agent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { asksForInput, completionSteps } from '@durable-a2a/testing';
import type { DelegationRef } from '@durable-a2a/shared';
import { apply } from '../../packages/workers/src/delegation/apply.ts';
import { leaseHeld, reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { startDemoAgent } from '../harness/agent.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { intentRow, journalWithIntent } from '../harness/journal-rows.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { startMonitor, testsOnCluster, useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const keep = closeKeptAfterEach();
let counter = 0;

describe('a settled delegation stays out of the unfinished index', () => {
  it('the case: checks written from rows read before the workflow settled do not put its entries back', async () => {
    const prefix = `not-put-back-${++counter}`;
    const agent = await startDemoAgent({ behaviour: asksForInput('which seat?', (answer) => completionSteps(`seat ${answer}`)) });
    const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 600_000 });
    keep(agent, producer, fleet);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a seat' });
    const ref: DelegationRef = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => (await producer.journal.getDelegation(ref))?.state === 'INPUT_REQUIRED', 'the question is parked', 30_000);
    // What a reconcile or the sweep read just before the workflow settled: the parked row.
    const stale = (await producer.journal.getDelegation(ref))!;
    await producer.cancel(id);
    const view = await producer.waitFor(id, { timeoutMs: 30_000 });
    expect(view.state).toBe('CANCELED');
    await eventually(async () => (await producer.journal.unfinishedCount()) === 0, 'the settle dropped both entries', 20_000);
    const settles = (await fleet.metrics.workflowsFinished.get()).values.reduce((sum, value) => sum + value.value, 0);

    // The writes those stale readers make next: a lease seen held, a reattach decided from the parked row, the
    // workflow entry's look-again of a workflow waiting for a person.
    await leaseHeld(fleet.context, ref, 1_000);
    await apply(fleet.context, stale, { kind: 'follow-deferred', delayMs: 0, resubscription: 1, reason: 'reattach' }, { source: 'reconcile' });
    await fleet.context.journal.scheduleCheck({ workflowId: id, delegationId: '*' }, Date.now());
    expect(await producer.journal.nextCheckAt(ref)).toBeUndefined();
    expect(await producer.journal.nextCheckAt({ workflowId: id, delegationId: '*' })).toBeUndefined();
    expect(await producer.journal.unfinishedCount()).toBe(0);

    // And a reconcile of the dropped entry settles nothing again.
    expect(await reconcileDelegation(fleet.context, ref, undefined)).toBe('settled');
    expect(await producer.journal.unfinishedCount()).toBe(0);
    expect((await fleet.metrics.workflowsFinished.get()).values.reduce((sum, value) => sum + value.value, 0)).toBe(settles);
    expect((await producer.get(id)).state).toBe('CANCELED');
  }, 90_000);

  it.skipIf(testsOnCluster())('a new intent gets its entry in the script that writes its row (never before it, never again for one that exists)', async () => {
    const { journal, ref } = await journalWithIntent(redis(), { prefix: `not-put-back-i${++counter}`, workflowId: 'w', now: () => 5_000 });
    const next = { workflowId: ref.workflowId, delegationId: 'next.1' };
    const sources: string[] = [];
    const monitor = await startMonitor(redisServer().url);
    keep({ close: async () => monitor.disconnect() });
    const indexKey = journal.keys.unfinished();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if ((args[0] ?? '').toLowerCase() === 'zadd' && args[1] === indexKey) sources.push(source);
      if ((args[0] ?? '').toLowerCase() === 'echo' && args[1] === 'intent-marker') sources.push('marker');
    });
    const row = { ...intentRow(ref.workflowId, next.delegationId), step: 'next' };
    expect(await journal.createIntent(ref.workflowId, row)).toBe(true);
    expect(await journal.nextCheckAt(next)).toBe(5_000);
    // Settled and dropped; the same intent journaled again by a worker that decided from an older version: it exists,
    // so its entry is not put back.
    await journal.removeFromIndex(next);
    expect(await journal.createIntent(ref.workflowId, row)).toBe(false);
    expect(await journal.nextCheckAt(next)).toBeUndefined();
    await redis().echo('intent-marker');
    await eventually(async () => sources.includes('marker'), 'the monitor saw the marker', 10_000);
    // One ZADD of the index in all, by the script (a reconcile that finds no row between a client's ZADD and the
    // script would drop an entry added before the row, and nothing would add it again).
    expect(sources.filter((source) => source !== 'marker')).toEqual(['lua']);
  });

  it('property: whatever the order of worker checks and settles, only an add puts an entry in the index', async () => {
    type Operation = 'settle' | 'add' | 'check' | 'checkWorkflow' | 'checks' | 'renew' | 'protocolError' | 'handover';
    const operation = fc.constantFrom<Operation>('settle', 'settle', 'add', 'check', 'checkWorkflow', 'checks', 'renew', 'protocolError', 'handover');
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 1_000_000 }), { minLength: 12, maxLength: 12 }), async (operations, times) => {
        const { journal, ref } = await journalWithIntent(redis(), { prefix: `not-put-back-p${++counter}`, workflowId: 'w', now: () => 5_000 });
        const workflowRef = { workflowId: ref.workflowId, delegationId: '*' };
        await journal.addToIndex(workflowRef, 5_000);
        const fence = await journal.claim(ref, 'us');
        await journal.applyStatus(ref, { fence, mode: 'snapshot', state: 'WORKING', taskId: 't1', agentCardUrl: 'http://agent.example/.well-known/agent-card.json' });
        expect(await journal.lease(ref, 'acquire', 'us', 60_000)).toBe(true);
        // The model: both entries there to begin with; a settle drops both, an add puts the delegation's back; nothing else adds.
        const present = { delegation: (await journal.nextCheckAt(ref)) !== undefined, workflow: (await journal.nextCheckAt(workflowRef)) !== undefined };
        expect(present).toEqual({ delegation: true, workflow: true });
        for (const [index, op] of operations.entries()) {
          const at = times[index]!;
          if (op === 'settle') {
            await journal.removeFromIndex(ref, workflowRef);
            present.delegation = present.workflow = false;
          } else if (op === 'add') {
            await journal.addToIndex(ref, at);
            present.delegation = true;
          } else if (op === 'check') await journal.scheduleCheck(ref, at);
          else if (op === 'checkWorkflow') await journal.scheduleCheck(workflowRef, at);
          else if (op === 'checks') await journal.scheduleChecks([{ ref, atMs: at }, { ref: workflowRef, atMs: at }]);
          else if (op === 'renew') await journal.renewLeases([{ ref, token: 'us' }], 60_000, () => at);
          else if (op === 'protocolError') await journal.noteProtocolError(ref, { code: 'PROTOCOL_ERROR', message: 'a bad answer', retryable: true });
          else {
            const row = (await journal.getDelegation(ref))!;
            await journal
              .applyStatus(ref, { fence: row.fence, mode: 'event', state: 'WORKING', endsLease: { token: 'us', when: 'handover', to: 'worker-1/local:follow', durationMs: 30_000, checkAt: at } })
              .catch(() => undefined);
          }
          const label = JSON.stringify({ operations: operations.slice(0, index + 1) });
          const delegationAt = await journal.nextCheckAt(ref);
          expect(delegationAt !== undefined, label).toBe(present.delegation);
          expect((await journal.nextCheckAt(workflowRef)) !== undefined, label).toBe(present.workflow);
          if (present.delegation && (op === 'add' || op === 'check' || op === 'checks')) expect(delegationAt, label).toBe(at);
        }
      }),
      { numRuns: 150 },
    );
  }, 120_000);
});
