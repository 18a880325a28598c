/**
 * The life of a task-id binding (`<prefix>:task:<sha256(card, task id)>`, docs/agents.md "Ownership"), read in Redis
 * after every path a first task id takes: the change applied, or refused as FENCE_LOST, VERSION_CONFLICT,
 * TASK_MISMATCH, ignored as finished, or the delegation gone (compacted); and on a Cluster's order (bound first by
 * `bindTask`, another slot, then the change refused). Then the workflow finishes and is compacted.
 *   - One server: the binding exists exactly when the change recorded the task id (bindTaskHere.lua inside
 *     applyStatus-5.lua, after every refusal check): a refused change claims nothing.
 *   - A Cluster's order: a refused change leaves the claim. It is a true claim, never another delegation's task: a
 *     first task id is bound only from an answer proven ours (the answer to our SendMessage, or a task holding our
 *     messageId: `bindAgent` in core/transitions.ts). The same delegation's change with it applies later (same owner);
 *     another delegation naming it is refused. Releasing it on the refusal would race the change that did apply
 *     (FENCE_LOST, VERSION_CONFLICT: another worker's write of the same task, bound as the same owner), leaving a
 *     recorded task id unbound.
 *   - Never kept for ever, never lapsed while its row may act: a binding expires at the attempt deadline (however far:
 *     a deadline has no upper bound; before review16s at most a year) plus twice the retention (PX, a safe integer
 *     whatever the deadline: `taskBindingTtlMs`; before, twice the retention from its making: an attempt running longer
 *     lost its binding while it ran, and another delegation could bind the same task id), the compacted record the
 *     retention after the finish; with retention 0 both are kept.
 * Property over the paths, retentions and deadlines; every path reached whatever the seed (`examples`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { Journal, JournalError, type DelegationRef } from '@durable-a2a/shared';
import { taskBindingTtlMs } from '../../packages/shared/src/journal/status.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { startDemoAgent } from '../harness/agent.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { intentRow } from '../harness/journal-rows.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const CARD = 'http://agent.example/.well-known/agent-card.json';
const PATHS = ['applied', 'fence-lost', 'version-conflict', 'task-mismatch', 'finished', 'compacted'] as const;
type Path = (typeof PATHS)[number];
let counter = 0;

const codeOf = (promise: Promise<unknown>): Promise<string> => promise.then(() => 'accepted', (error: unknown) => (error instanceof JournalError ? error.code : String(error)));

/** A RUNNING workflow whose delegation main.1 is in INTENT (retention `retentionMs`). */
async function intentOf(retentionMs: number): Promise<{ journal: Journal; ref: DelegationRef }> {
  const journal = new Journal(redis(), { prefix: `tb${++counter}`, retentionMs });
  const ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
  const definition = JSON.stringify({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: CARD, message: { text: 'x' } }] });
  await journal.createWorkflow(ref.workflowId, { state: 'RUNNING', definition, createdAt: '1000' }, { ...intentRow(ref.workflowId), agentCardUrl: CARD });
  return { journal, ref };
}

/** A first task id's status change (SUBMITTED, to be bound), with the attempt deadline `bindUntilMs` when given. */
const firstTask = (taskId: string, bindUntilMs?: number) => ({ mode: 'snapshot' as const, state: 'SUBMITTED' as const, taskId, agentCardUrl: CARD, ...(bindUntilMs !== undefined ? { bindUntilMs } : {}) });

/** The first task id `taskId` of main.1 reported along `path` (what the journal answered). */
async function report(journal: Journal, ref: DelegationRef, path: Path, taskId: string, bindUntilMs?: number): Promise<string> {
  const change = firstTask(taskId, bindUntilMs);
  switch (path) {
    case 'applied':
      return (await journal.applyStatus(ref, change)).applied ? 'applied' : 'ignored';
    case 'fence-lost':
      return codeOf(journal.applyStatus(ref, { ...change, fence: 999 }));
    case 'version-conflict':
      return codeOf(journal.applyStatus(ref, { ...change, expectedVersion: 999 }));
    case 'task-mismatch':
      // Another worker recorded T0 after this one read the row (no task id then): its change names another task.
      await journal.applyStatus(ref, { ...change, taskId: `${taskId}-first` });
      return codeOf(journal.applyStatus(ref, change));
    case 'finished':
      await journal.applyStatus(ref, { mode: 'outcome', state: 'FAILED', error: { code: 'DEADLINE_EXCEEDED', message: 'past the deadline', retryable: false } });
      return (await journal.applyStatus(ref, change)).applied ? 'applied' : 'ignored';
    case 'compacted':
      await journal.applyStatus(ref, { mode: 'outcome', state: 'FAILED', error: { code: 'DEADLINE_EXCEEDED', message: 'past the deadline', retryable: false } });
      await journal.updateWorkflow(ref.workflowId, { state: 'FAILED' });
      return (await journal.applyStatus(ref, change)).applied ? 'applied' : 'ignored';
  }
}

const EXPECTED_ANSWER: Record<Path, string> = { applied: 'applied', 'fence-lost': 'FENCE_LOST', 'version-conflict': 'VERSION_CONFLICT', 'task-mismatch': 'TASK_MISMATCH', finished: 'ignored', compacted: 'ignored' };

async function binding(journal: Journal, taskId: string): Promise<{ owner: string | null; ttlMs: number }> {
  const key = journal.keys.taskOwner(CARD, taskId);
  return { owner: await redis().get(key), ttlMs: await redis().pttl(key) };
}

/** A year (before review16s the longest an attempt deadline extended a binding, though deadlines have no upper bound). */
const YEAR_MS = 365 * 24 * 3600 * 1000;

/**
 * A binding's TTL under `retentionMs` for an attempt deadline `untilInMs` from its making: until the deadline (however
 * far; none past), then twice the retention (less what passed since), or none (-1) with retention 0.
 */
function expectBindingTtl(ttlMs: number, retentionMs: number, untilInMs = 0): void {
  if (retentionMs === 0) return void expect(ttlMs).toBe(-1);
  const full = 2 * retentionMs + Math.max(untilInMs, 0);
  expect(ttlMs).toBeGreaterThan(full - 30_000);
  expect(ttlMs).toBeLessThanOrEqual(full);
}

describe('task-id bindings: claimed with the change that records the task, never kept for ever', () => {
  it('case: a task bound by an attempt whose deadline is ten retentions away stays bound until then (it lapsed at twice the retention, the row still running)', async () => {
    const { journal, ref } = await intentOf(60_000);
    expect(await report(journal, ref, 'applied', 'T-long', Date.now() + 600_000)).toBe('applied');
    const claimed = await binding(journal, 'T-long');
    expect(claimed.owner).toBe(`${ref.workflowId}|${ref.delegationId}`);
    expectBindingTtl(claimed.ttlMs, 60_000, 600_000);
  });

  it('case: an attempt deadline two years away (DA2A_ATTEMPT_DEADLINE_MS has no upper bound) keeps the binding two years (it lapsed after one year and two retentions, the attempt still running)', async () => {
    const { journal, ref } = await intentOf(60_000);
    expect(await report(journal, ref, 'applied', 'T-two-years', Date.now() + 2 * YEAR_MS)).toBe('applied');
    expectBindingTtl((await binding(journal, 'T-two-years')).ttlMs, 60_000, 2 * YEAR_MS);
  });

  it('property over retentions, clocks and deadlines (NaN, infinities, fractions, past, far off): a TTL Redis takes, never shorter than the attempt plus twice the retention', async () => {
    const { journal } = await intentOf(60_000);
    const ms = fc.oneof(fc.double({ noDefaultInfinity: false }), fc.integer({ min: -1e13, max: 1e13 }), fc.constantFrom(Number.NaN, Infinity, -Infinity, 0.5, Number.MAX_SAFE_INTEGER, 1e300));
    const examples: [number, number, number | undefined][] = [[60_000, 1_000, Number.NaN], [60_000, 1_000, Infinity], [60_000, 1_000, 1_000 + 2 * YEAR_MS], [60_000, 1_000, 1_000.5], [60_000, 1_000, -5], [0, 1_000, 5_000], [60_000, 1_000, undefined]];
    let bound = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(0, 1, 60_000, 1.5, 7 * 24 * 3600 * 1000), fc.integer({ min: 0, max: 4e12 }), fc.option(ms, { nil: undefined }), async (retentionMs, nowMs, untilMs) => {
        const ttl = taskBindingTtlMs(retentionMs, nowMs, untilMs);
        if (retentionMs === 0) return void expect(ttl).toBe(0);
        expect(Number.isSafeInteger(ttl) && ttl > 0).toBe(true);
        expect(ttl).toBeGreaterThanOrEqual(2 * retentionMs);
        const wanted = 2 * retentionMs + ((untilMs ?? nowMs) - nowMs);
        // Never shorter than the attempt plus twice the retention (a NaN deadline: as long as it can be).
        if (Number.isNaN(wanted)) expect(ttl).toBe(Number.MAX_SAFE_INTEGER);
        else expect(ttl).toBeGreaterThanOrEqual(Math.min(wanted, Number.MAX_SAFE_INTEGER));
        // Redis takes it as a PX (digits, within its range): a real binding with it.
        const key = journal.keys.taskOwner(CARD, `T-ttl-${++bound}`);
        expect(await redis().call('SET', key, 'x', 'NX', 'GET', 'PX', ttl)).toBeNull();
        // With a TTL (a 2 ms one may have run out already: -2), never kept for ever (-1).
        expect(await redis().pttl(key)).not.toBe(-1);
      }),
      { numRuns: 200, examples },
    );
  });

  it('property over paths x Cluster order x retention x attempt deadline: the binding in Redis (owner, TTL), then after the finish', async () => {
    type Run = [Path, boolean, number, number | undefined];
    const examples: Run[] = PATHS.flatMap((path): Run[] => [[path, false, 60_000, undefined], [path, true, 60_000, 600_000]]);
    examples.push(['applied', false, 0, 600_000], ['fence-lost', true, 0, undefined], ['applied', false, 60_000, -5_000], ['applied', true, 60_000, 2 * YEAR_MS]);
    const deadlines = fc.option(fc.constantFrom(-5_000, 0, 90_000, 600_000, 30 * 24 * 3600 * 1000, 2 * YEAR_MS, 100 * YEAR_MS), { nil: undefined });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...PATHS), fc.boolean(), fc.constantFrom(60_000, 3_600_000, 0), deadlines, async (path, clusterOrder, retentionMs, deadlineIn) => {
        const { journal, ref } = await intentOf(retentionMs);
        const owner = `${ref.workflowId}|${ref.delegationId}`;
        const taskId = `T${counter}`;
        const bindUntilMs = deadlineIn === undefined ? undefined : Date.now() + deadlineIn;
        // A Cluster binds first (the owner key is another slot), then runs the change; one server binds inside it.
        const boundFirst = clusterOrder || redis().isCluster;
        if (clusterOrder) await journal.bindTask(ref, CARD, taskId, bindUntilMs);
        expect(await report(journal, ref, path, taskId, bindUntilMs)).toBe(EXPECTED_ANSWER[path]);
        const claimed = await binding(journal, taskId);
        if (path === 'applied' || boundFirst) {
          expect(claimed.owner).toBe(owner);
          expectBindingTtl(claimed.ttlMs, retentionMs, deadlineIn);
        } else {
          expect(claimed).toEqual({ owner: null, ttlMs: -2 });
        }
        if (path === 'applied' || path === 'finished' || path === 'compacted') return;
        // The same delegation's change naming the task applies once the row allows it (a claim left by a refused
        // change is its own: same owner); another delegation naming it is refused while it is claimed.
        const other = { workflowId: ref.workflowId, delegationId: 'main.2' };
        await journal.createIntent(ref.workflowId, { ...intentRow(ref.workflowId, 'main.2'), agentCardUrl: CARD, attempt: '2' });
        if (path !== 'task-mismatch') {
          expect((await journal.applyStatus(ref, firstTask(taskId, bindUntilMs))).applied).toBe(true);
          expect((await journal.getDelegation(ref))!.taskId).toBe(taskId);
          expect(await codeOf(journal.applyStatus(other, firstTask(taskId, bindUntilMs)))).toBe('TASK_BOUND_ELSEWHERE');
        } else if (!boundFirst) {
          // One server: the refused mismatch claimed nothing, so the task id stays free for the delegation the agent had it for.
          expect((await journal.applyStatus(other, firstTask(taskId, bindUntilMs))).applied).toBe(true);
        }
        // The workflow finishes and is compacted: its record expires after the retention, every binding of it
        // after twice the retention from its making: bounded, never kept for ever (retention 0: both kept).
        for (const delegation of [ref, other]) await journal.applyStatus(delegation, { mode: 'outcome', state: 'CANCELED' }).catch(() => undefined);
        await journal.updateWorkflow(ref.workflowId, { state: 'CANCELED' });
        const recordTtl = await redis().pttl(journal.keys.finished(ref.workflowId));
        const after = await binding(journal, taskId);
        if (retentionMs === 0) {
          expect([recordTtl, after.ttlMs]).toEqual([-1, -1]);
        } else {
          expect(recordTtl).toBeGreaterThan(0);
          expect(recordTtl).toBeLessThanOrEqual(retentionMs);
          expectBindingTtl(after.ttlMs, retentionMs, deadlineIn);
          // It outlives the compacted record by at most one retention past the attempt deadline.
          expect(after.ttlMs - recordTtl).toBeLessThanOrEqual(retentionMs + Math.max(deadlineIn ?? 0, 0) + 30_000);
        }
      }),
      { numRuns: 40, examples },
    );
  }, 120_000);
});

describe('the fleet binds a first task id until the attempt deadline', () => {
  it('case: retention 1 min, attempt deadline 10 min: the binding outlives the deadline by twice the retention (it was 2 min from the bind)', async () => {
    const agent = await startDemoAgent({ behaviour: completesWith('done') });
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: 'tb-fleet', retentionMs: 60_000 });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: 'tb-fleet', retentionMs: 60_000, attemptDeadlineMs: 600_000 });
    try {
      const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go' });
      const ref = { workflowId: id, delegationId: 'main.1' };
      const record = await eventually(async () => {
        const current = await producer.journal.getDelegation(ref);
        return current?.taskId !== undefined && current;
      }, 'the task id recorded', 20_000);
      const key = fleet.context.journal.keys.taskOwner(record.agentCardUrl, record.taskId!);
      expect(await redis().get(key)).toBe(`${id}|main.1`);
      // Until the deadline (createdAt + 10 min), then 2 min; a second of slack for the clocks' milliseconds.
      const ttlMs = await redis().pttl(key);
      const expected = record.createdAt + 600_000 + 120_000 - Date.now();
      expect(ttlMs).toBeGreaterThan(expected - 30_000);
      expect(ttlMs).toBeLessThanOrEqual(expected + 1_000);
    } finally {
      await fleet.close();
      await producer.close();
      await agent.close();
    }
  }, 60_000);
});
