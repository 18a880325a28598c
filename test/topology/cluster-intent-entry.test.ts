/**
 * The kind "a new intent's unfinished-index entry and its row are not written together", on a Redis Cluster, always
 * (whatever DA2A_TEST_REDIS says). On one server createIntent-4.lua writes both; on a Cluster the index is in another
 * slot, so the entry is added before the script. Before: it was added due at once, so a sweep between the add and the
 * script found an entry without a row and dropped it, and nothing added it again (a crash of the send worker after
 * that left the step unreconciled); and an intent journaled again (it existed, finished and settled, or its workflow
 * was gone) put an entry back that the reconciler then settled a second time. Now the entry is added only when there
 * is none, due `CLUSTER_INTENT_GRACE_MS` later, and taken back when the script created nothing and no one can need
 * it. A real three-master cluster, the real scripts, the real reconciler.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { CLUSTER_INTENT_GRACE_MS, createRedisClient, type DelegationRef, type Journal, type RedisClient } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { startRedisCluster, type RedisClusterHandle } from '../harness/redis-cluster.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { intentRow, journalWithIntent } from '../harness/journal-rows.ts';

const PREFIX = 'clu-intent';
let cluster: RedisClusterHandle;
let client: RedisClient;
let fleet: Fleet;
let counter = 0;

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = createRedisClient(cluster.url);
  fleet = await startTestFleet({ redisUrl: cluster.url, prefix: PREFIX, reconcileIntervalMs: 600_000, metricsRegistry: new Registry() });
}, 60_000);
afterAll(async () => {
  await fleet?.close();
  client?.disconnect();
  await cluster?.stop();
});

/** The port of the master serving `key`'s slot. */
async function portOf(key: string): Promise<number> {
  const slot = Number(await client.call('CLUSTER', 'KEYSLOT', key));
  const ranges = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
  const range = ranges.find(([from, to]) => slot >= from && slot <= to);
  if (!range) throw new Error(`no master serves slot ${slot}`);
  return range[2][1];
}

/** A workflow id whose rows live on another master than the unfinished index. */
async function workflowAwayFromIndex(journal: Journal): Promise<string> {
  const indexPort = await portOf(journal.keys.unfinished());
  for (let attempt = 0; attempt < 100; attempt++) {
    const workflowId = `w${++counter}`;
    if ((await portOf(journal.keys.workflow(workflowId))) !== indexPort) return workflowId;
  }
  throw new Error('every workflow id tried hashed to the index master');
}

const next = (workflowId: string): DelegationRef => ({ workflowId, delegationId: 'next.1' });
const nextRow = (workflowId: string) => ({ ...intentRow(workflowId, 'next.1'), step: 'next' });

/** Finishes a delegation's row and drops its entry, as a settle does. */
async function finishAndSettle(journal: Journal, ref: DelegationRef): Promise<void> {
  const fence = await journal.claim(ref, 'us');
  await journal.applyStatus(ref, { fence, mode: 'snapshot', state: 'COMPLETED', taskId: `t-${ref.workflowId}`, agentCardUrl: 'http://agent.example/.well-known/agent-card.json' });
  await journal.removeFromIndex(ref);
}

describe('a Cluster: a new intent and its unfinished-index entry', () => {
  it('the case: a sweep between the entry and the row does not drop the entry', async () => {
    const probe = (await journalWithIntent(client, { prefix: PREFIX, workflowId: 'probe', now: () => Date.now() })).journal;
    const workflowId = await workflowAwayFromIndex(probe);
    const { journal, ref } = await journalWithIntent(client, { prefix: PREFIX, workflowId, now: () => Date.now() });
    await journal.removeFromIndex(ref);
    // The script cannot run while its master refuses writes; the index's master still takes the add.
    const rowsMaster = new Redis(await portOf(journal.keys.workflow(workflowId)), '127.0.0.1');
    const journaledAt = Date.now();
    try {
      // Paused until the test unpauses it (the bound only keeps a crashed test from pausing the master for ever).
      await rowsMaster.call('CLIENT', 'PAUSE', '600000', 'WRITE');
      const creating = journal.createIntent(workflowId, nextRow(workflowId));
      // Read through the fleet's connections: the script waits on this client's, and what follows it on it.
      const reader = fleet.context.journal;
      await eventually(async () => (await reader.nextCheckAt(next(workflowId))) !== undefined, 'the entry is added before the row', 20_000);
      expect(await reader.getDelegation(next(workflowId))).toBeUndefined();
      // What a sweep does now: reconcile every entry due (the reconciler drops an entry whose row it does not find).
      // A sweep now, but never later than the grace (on a loaded machine the wait above can take seconds).
      const sweptAt = Math.min(Date.now(), journaledAt + CLUSTER_INTENT_GRACE_MS - 1);
      const due = (await reader.dueDelegations(sweptAt, 10_000)).filter((entry) => entry.workflowId === workflowId);
      for (const entry of due) await reconcileDelegation(fleet.context, entry, undefined);
      await rowsMaster.call('CLIENT', 'UNPAUSE');
      expect(await creating).toBe(true);
    } finally {
      await rowsMaster.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      rowsMaster.disconnect();
    }
    expect((await journal.getDelegation(next(workflowId)))?.state).toBe('INTENT');
    const dueAt = await journal.nextCheckAt(next(workflowId));
    expect(dueAt, 'the new intent keeps its entry').toBeDefined();
    expect(dueAt!, 'due a grace after it was journaled').toBeGreaterThanOrEqual(journaledAt + CLUSTER_INTENT_GRACE_MS);
  }, 90_000);

  it('an intent journaled again does not put back a settled delegation, nor one of a workflow that is gone', async () => {
    const { journal } = await journalWithIntent(client, { prefix: PREFIX, workflowId: `w${++counter}`, now: () => Date.now() });
    const workflowId = `w${counter}`;
    expect(await journal.createIntent(workflowId, nextRow(workflowId))).toBe(true);
    await finishAndSettle(journal, next(workflowId));
    expect(await journal.createIntent(workflowId, nextRow(workflowId))).toBe(false);
    expect(await journal.nextCheckAt(next(workflowId))).toBeUndefined();

    const missing = `gone-${++counter}`;
    await expect(journal.createIntent(missing, nextRow(missing))).rejects.toThrow(/DELEGATION_MISSING/);
    expect(await journal.nextCheckAt(next(missing))).toBeUndefined();
  }, 60_000);

  it('property: whatever the order of intents journaled (current, stale, any version), settles and workflows gone, an unfinished row has an entry and a settled one none', async () => {
    type Operation = 'create' | 'createStale' | 'createAny' | 'settle' | 'workflowGone';
    const operation = fc.constantFrom<Operation>('create', 'createStale', 'createAny', 'settle', 'workflowGone');
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 8 }), async (operations) => {
        const workflowId = `p${++counter}`;
        const { journal, ref } = await journalWithIntent(client, { prefix: PREFIX, workflowId, now: () => Date.now() });
        await journal.removeFromIndex(ref);
        const target = next(workflowId);
        let row: 'none' | 'unfinished' | 'settled' = 'none';
        let workflowGone = false;
        for (const [index, op] of operations.entries()) {
          const label = JSON.stringify(operations.slice(0, index + 1));
          const version = async () => (workflowGone ? 1 : Number(await client.hget(journal.keys.workflow(workflowId), 'version')));
          if (op === 'settle') {
            if (row !== 'unfinished') continue;
            await finishAndSettle(journal, target);
            row = 'settled';
          } else if (op === 'workflowGone') {
            await client.del(journal.keys.workflow(workflowId));
            workflowGone = true;
          } else {
            const entryBefore = await journal.nextCheckAt(target);
            const expectedWorkflowVersion = op === 'create' ? await version() : op === 'createStale' ? (await version()) - 1 : undefined;
            const created = await journal.createIntent(workflowId, nextRow(workflowId), { expectedWorkflowVersion }).catch(() => false);
            if (created) row = 'unfinished';
            // A workflow gone: nothing added, nothing taken that was there.
            if (workflowGone) expect(await journal.nextCheckAt(target), `${label}: a workflow gone`).toBe(entryBefore);
          }
          const entry = await journal.nextCheckAt(target);
          if (row === 'unfinished') expect(entry, `${label}: an unfinished row has an entry`).toBeDefined();
          if (row === 'settled') expect(entry, `${label}: a settled row has none`).toBeUndefined();
          // An entry without a row (a stale intent's: another worker may still create it) is not due yet; the
          // reconcile after the grace drops it.
          if (entry !== undefined && row === 'none') expect(entry, `${label}: an entry without a row is not due yet`).toBeGreaterThan(Date.now());
        }
      }),
      { numRuns: 60 },
    );
  }, 180_000);
});
