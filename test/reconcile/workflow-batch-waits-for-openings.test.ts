/**
 * A batch of workflow entries waits while its worker opens reattached streams (`reconcile-batch.ts` `batchWaitMs`):
 * after a whole-fleet crash the start-up sweep enqueues one workflow entry per running workflow, and once the
 * dead-worker sweep's batches had handed their streams to the local follows, those workflow batches took the reconcile
 * slots and the CPU beside the openings (docs/performance.md, recovery36). A workflow-only batch is now moved to
 * delayed while local follows wait for their opening turn, and runs once they have opened (or after
 * `workflowBatchWaits` waits, whatever the openings: counted in the job's data, so the enqueuing process's clock,
 * `job.timestamp`, neither lengthens nor shortens the bound). Delegation batches never wait.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { enqueueReconcileBatch } from '@durable-a2a/shared';
import { OPENINGS_AT_ONCE } from '../../packages/workers/src/delegation/runs/follow-local.ts';
import { batchWaitMs, WORKFLOW_BATCH_WAIT_MS } from '../../packages/workers/src/delegation/runs/reconcile-batch.ts';
import type { WorkerContext } from '../../packages/workers/src/context.ts';
import type { CompiledFleetOptions } from '../../packages/workers/src/options.ts';
import { useRedisServer } from '../harness/redis.ts';
import { eventually, reconcileOutcomes, startTestFleet } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { startScriptedAgent, task, taskEvent } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
/** Longer than the test: no timer sweep, idle cut or request timeout ends a held stream. */
const LONG_MS = 600_000;
/** A bound on a batch's waits no run of the first test reaches, however slow the machine (each wait is 1 s). */
const UNREACHED_WAITS = 1_000_000;
const DAY_MS = 86_400_000;

describe('workflow batches and the openings of reattached streams', () => {
  it('a workflow-only batch is delayed while streams wait to open, and runs once they opened; a delegation batch runs at once', async () => {
    const prefix = 'wf-batch-openings';
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // Every stream's headers at once, its first event (the task's snapshot) only when the test opens the gate: each
    // local follow holds its opening turn until then.
    const contexts = new Map<string, string>();
    const working = (id: string) => task(id, 'WORKING', { contextId: contexts.get(id) ?? 'none' });
    const agent = await startScriptedAgent({
      SendMessage: (params: { message: { messageId: string; contextId: string } }) => {
        contexts.set(`t-${params.message.messageId}`, params.message.contextId);
        return { result: { task: working(`t-${params.message.messageId}`) } };
      },
      SubscribeToTask: (params: { id: string }) => ({ sse: [{ until: gate }, taskEvent(working(params.id))], endAfter: 'hang' }),
      GetTask: (params: { id: string }) => ({ result: working(params.id) }),
    });
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: LONG_MS, streamIdleTimeoutMs: LONG_MS, requestTimeoutMs: LONG_MS, concurrency: { send: 50, follow: 1_000 }, followSlotsPerAgent: 1_000, workflowBatchWaits: UNREACHED_WAITS });
    keep(agent, producer, fleet);
    const count = OPENINGS_AT_ONCE + 20;
    const started = await Promise.all(Array.from({ length: count }, (_, index) => producer.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `openings-${index}` })));
    await eventually(async () => {
      if (process.env.DEBUG_OPENINGS) console.log('waiting', fleet.context.openingsWaiting?.(), 'local', (await fleet.metrics.localFollows.get()).values[0]?.value, 'subscribes', agent.requests.filter((request) => request.method === 'SubscribeToTask').length, 'sends', agent.requests.filter((request) => request.method === 'SendMessage').length);
      return (fleet.context.openingsWaiting?.() ?? 0) > 0 || undefined;
    }, 'local follows waiting for their opening turn', 120_000, 1000);

    const queue = fleet.context.queues.reconcile;
    const workflowRuns = async () => Object.entries(await reconcileOutcomes(fleet)).filter(([outcome]) => outcome.startsWith('workflow-')).reduce((sum, [, runs]) => sum + runs, 0);
    await enqueueReconcileBatch(fleet.context.queues, started.slice(0, 3).map(({ id }) => ({ workflowId: id, delegationId: '*' })), { sweep: 'openings-test', part: 0, later: true });
    const ours = (job: { data: { refs?: { delegationId: string }[] } }) => job.data.refs?.length === 3 && job.data.refs.every((ref) => ref.delegationId === '*');
    const delayed = await eventually(async () => (await queue.getDelayed()).find(ours), 'the workflow batch moved to delayed', 30_000, 50);
    // A delegation batch is not held back by the openings (it finds the lease held: `followed`).
    const followedBefore = (await reconcileOutcomes(fleet)).followed ?? 0;
    await enqueueReconcileBatch(fleet.context.queues, [{ workflowId: started[0]!.id, delegationId: 'main.1' }], { sweep: 'openings-test', part: 1, later: false });
    await eventually(async () => ((await reconcileOutcomes(fleet)).followed ?? 0) > followedBefore || undefined, 'the delegation batch reconciled', 30_000, 50);
    expect(fleet.context.openingsWaiting?.()).toBeGreaterThan(0);
    expect(await queue.getJobState(delayed.id!)).toBe('delayed');

    const before = await workflowRuns();
    open();
    // Once the streams opened, the batch runs (a second at most after its last look): its three workflow entries decided.
    await eventually(async () => ((await queue.getJobState(delayed.id!)) !== 'delayed' && !(await queue.getDelayed()).some(ours)) || undefined, 'the workflow batch run once the streams opened', 60_000, 100);
    await eventually(async () => (await workflowRuns()) >= before + 3 || undefined, 'its workflow entries decided', 60_000, 100);
    expect(fleet.context.openingsWaiting?.()).toBe(0);
  }, 240_000);

  it('a workflow batch enqueued by a clock two days behind or ahead waits while streams wait to open, and ends after its bound of waits', async () => {
    const prefix = 'wf-batch-skewed';
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: LONG_MS, workflowBatchWaits: 3 });
    keep(fleet);
    // Streams wait to open for the whole test (the fleet's own count replaced by the test's): only the bound ends a wait.
    fleet.context.openingsWaiting = () => 1;
    const queue = fleet.context.queues.reconcile;
    // As a peer whose clock is two days off would enqueue them: `job.timestamp` far in the past and far in the future.
    const skewed = await Promise.all([-2 * DAY_MS, 2 * DAY_MS].map((offsetMs, part) => queue.add('batch', { refs: [{ workflowId: `skewed-${part}`, delegationId: '*' }] }, { jobId: `skewed-${part}`, timestamp: Date.now() + offsetMs, removeOnComplete: false })));
    for (const job of skewed) {
      const state = await eventually(async () => {
        const current = await queue.getJobState(job.id!);
        return current === 'completed' || current === 'failed' ? current : undefined;
      }, `batch ${job.id} ended`, 60_000, 100);
      expect(state).toBe('completed');
      // It waited exactly its bound (3 waits of 1 s) while the streams waited, then ran, whatever the enqueuer's clock.
      expect((await queue.getJob(job.id!))!.data).toMatchObject({ openingWaits: 3 });
    }
  }, 120_000);

  it('property: only a batch of workflow entries alone waits, only while streams wait to open, and never past its bound of waits', () => {
    const ref = fc.record({ workflowId: fc.constantFrom('w1', 'w2', 'w3'), delegationId: fc.constantFrom('*', '*', 'main.1') });
    fc.assert(
      fc.property(fc.array(ref, { maxLength: 6 }), fc.nat(400), fc.nat(80), fc.nat(80), (refs, waiting, bound, waitsSoFar) => {
        const options = { workflowBatchWaits: bound } as CompiledFleetOptions;
        const waits = refs.length > 0 && refs.every((each) => each.delegationId === '*') && waiting > 0 && waitsSoFar < bound;
        expect(batchWaitMs({ options, openingsWaiting: () => waiting }, refs, waitsSoFar)).toBe(waits ? WORKFLOW_BATCH_WAIT_MS : 0);
        // A context without local follows never waits.
        expect(batchWaitMs({ options } as WorkerContext, refs, waitsSoFar)).toBe(0);
      }),
      { numRuns: 300 },
    );
  });
});
