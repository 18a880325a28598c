/**
 * Attacks on the send path's one-round-trip changes: the send lease given back by the answer's own transition
 * (applyStatus-5.lua `endsLease`), the mark that claims (markSending-2.lua ARGV[6]) and the task id bound inside
 * applyStatus on one server (ARGV[12] 'here:…'). Each case checks what the agent saw (SendMessage count), the
 * journal, that no lease is left held (`followLeaseRemainingMs` 0: the reconciler would wait `lockDurationMs`)
 * and, where a task id was named, its owner key.
 */
import { scriptText } from '../../packages/shared/src/journal/scripts.ts';
import { describe, expect, it } from 'vitest';
import type { Producer } from '@durable-a2a/producer';
import { enqueueSend, indexMember, Journal } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { intentRow } from '../harness/journal-rows.ts';
import { finished, metric, recordOf, ref, useFieldCases, workflowSettled } from '../harness/field-cases.ts';
import { useRedisClient } from '../harness/redis.ts';
import { SU, agentMessage, ev, task, taskEvent } from '../harness/scripted-agent.ts';
import { eventually } from '../harness/fleet.ts';

const h = useFieldCases();
/** Long enough that a lease left held would still be there when each case looks. */
const LEASE_MS = 30_000;
/** No periodic reconcile inside a case: what the send path left is what the case sees. */
const QUIET = { lockDurationMs: LEASE_MS, reconcileIntervalMs: 60_000 };
const redis = useRedisClient(h.redisServer);

/** Resolves once `count` callers have arrived (a bounded barrier for answers that must leave together). */
function barrier(count: number) {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return async () => {
    if (++arrived >= count) open();
    await Promise.race([opened, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  };
}

const sendJobsIdle = async (queues: { send: { getJobCounts(...states: string[]): Promise<Record<string, number>> } }) => {
  const counts = await queues.send.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  return Object.values(counts).every((count) => count === 0);
};

/** Waits (bounded) until delegation `id` and its workflow are COMPLETED and its follow has ended (no local follow, no follow job active). */
async function completedAndFollowEnded(p: Producer, fleet: Fleet, id: string): Promise<void> {
  expect((await finished(p, id)).state).toBe('COMPLETED');
  expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
  const followsRunning = async () => (await metric(fleet.metrics.localFollows)) + ((await fleet.context.queues.follow.getJobCounts('active')).active ?? 0);
  await eventually(async () => (await followsRunning()) === 0, 'the follow ended', 10_000);
}

describe('attack: the send path', () => {
  it('two delegations answered with the same task id at the same moment (two workers): one records it, the other is refused, no lease left', async () => {
    const prefix = h.newPrefix();
    const arrive = barrier(2);
    const agent = await h.agentWith({
      SendMessage: async (params) => {
        await arrive();
        return { result: { task: task('SAME', 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } };
      },
      SubscribeToTask: () => ({ sse: [], endAfter: 'hang' }),
    });
    const p = h.producer(prefix);
    const fleets = [await h.fleetFor(prefix, QUIET), await h.fleetFor(prefix, QUIET)];
    const [a, b] = await Promise.all([
      p.delegate({ agent: agent.cardUrl, text: 'first', idempotencyKey: 'same-a' }),
      p.delegate({ agent: agent.cardUrl, text: 'second', idempotencyKey: 'same-b' }),
    ]);
    await eventually(async () => agent.count('SendMessage') === 2 && (await sendJobsIdle(fleets[0]!.context.queues)), 'both sends done', 10_000);
    const records = [(await recordOf(p, a.id))!, (await recordOf(p, b.id))!];
    const owners = records.filter((record) => record.taskId === 'SAME');
    expect(owners).toHaveLength(1);
    const refused = records.find((record) => record.taskId !== 'SAME')!;
    // One task cannot be both delegations': the refused one goes to a person at once (task-bound-elsewhere), never
    // searched for ever (test/reconcile/task-bound-elsewhere.test.ts).
    const settledRefused = await finished(p, refused.workflowId);
    expect(settledRefused).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'AMBIGUOUS' } });
    expect(settledRefused.protocolError?.code).toBe('TASK_BOUND_ELSEWHERE');
    expect(await p.journal.followLeaseRemainingMs(ref(refused.workflowId))).toBe(0);
    expect(await redis().get(p.journal.keys.taskOwner(agent.cardUrl, 'SAME'))).toBe(indexMember(owners[0]!.workflowId, 'main.1'));
    expect(agent.count('SendMessage')).toBe(2);
  }, 20_000);

  it('two send jobs for one delegation racing on two workers (duplicate job id bypassed): exactly one SendMessage', async () => {
    const prefix = h.newPrefix();
    const agent = await h.agentWith({
      SendMessage: (params) => ({ result: { message: agentMessage('done', { contextId: params.message.contextId }) } }),
    });
    const p = h.producer(prefix);
    const fleets = [await h.fleetFor(prefix, QUIET), await h.fleetFor(prefix, QUIET)];
    // Both fleets' send workers are paused until the extra jobs are in, then all of them run together.
    await fleets[0]!.context.queues.send.pause();
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'once', idempotencyKey: 'dup-send' });
    for (let i = 1; i <= 3; i++) await enqueueSend(fleets[0]!.context.queues, ref(id), 0, Date.now() + i);
    await fleets[0]!.context.queues.send.resume();
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    await eventually(async () => sendJobsIdle(fleets[0]!.context.queues), 'send jobs done', 10_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.sendCount).toBe(1);
    expect(await p.journal.followLeaseRemainingMs(ref(id))).toBe(0);
  }, 20_000);

  it('scripts flushed (NOSCRIPT) between the mark and the answer: the direct Message completes once, the lease given back', async () => {
    const { producer: p, agent } = await h.setUp(
      () => ({
        SendMessage: async (params) => {
          await redis().call('SCRIPT', 'FLUSH');
          return { result: { message: agentMessage('done', { contextId: params.message.contextId }) } };
        },
      }),
      QUIET,
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'flush', idempotencyKey: 'flush' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
    expect(await p.journal.followLeaseRemainingMs(ref(id))).toBe(0);
  }, 20_000);

  // An unsuccessful task carrying artifacts is effect unknown (failedartifacts31): AMBIGUOUS, a person decides.
  it('an answer REJECTED with artifacts over the limit: AMBIGUOUS (LIMIT_EXCEEDED) once, the task id bound to us, no lease left', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      () => ({
        SendMessage: (params) => ({ result: { task: task('T-REJ', 'REJECTED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'x'.repeat(4_000) } }) } }),
      }),
      { ...QUIET, artifactBytesPerDelegation: 1_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'too much', idempotencyKey: 'over' });
    const record = await finished(p, id);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error?.code).toBe('LIMIT_EXCEEDED');
    expect(record.taskId).toBe('T-REJ');
    expect(await metric(fleet.metrics.sends)).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    expect(await p.journal.followLeaseRemainingMs(ref(id))).toBe(0);
    expect(await redis().get(p.journal.keys.taskOwner(agent.cardUrl, 'T-REJ'))).toBe(indexMember(id, 'main.1'));
  }, 20_000);

  /** The stream's finishing status change, then more: the follow ends, the lease is gone, one SubscribeToTask, one terminal transition. */
  const finishingThenMore = async (name: string, after: (contextId: string | undefined) => string[]) => {
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, artifacts: { a1: 'done' } })), ev(SU('COMPLETED', { contextId: seen.contextId })), ...after(seen.contextId)],
          endAfter: 'hang',
        }),
      }),
      QUIET,
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: name, idempotencyKey: name });
    await completedAndFollowEnded(p, fleet, id);
    expect(await p.journal.followLeaseRemainingMs(ref(id))).toBe(0);
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(await metric(fleet.metrics.transitions, { state: 'TASK_STATE_COMPLETED' })).toBe(1);
  };

  it('a stream whose terminal event arrives twice: settled once, the follow lease gone', async () => {
    await finishingThenMore('twice', (contextId) => [ev(SU('COMPLETED', { contextId }))]);
  }, 20_000);

  it('a stream with a terminal event then a foreign event: settled once, the follow lease gone', async () => {
    await finishingThenMore('foreign', (contextId) => [ev(SU('FAILED', { contextId, taskId: 'OTHER' }))]);
  }, 20_000);

  it('an answer naming a task already COMPLETED: settled once from the answer, the send lease given back, no follow opened', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      () => ({
        SendMessage: (params) => ({ result: { task: task('T-DONE', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'done' } }) } }),
      }),
      QUIET,
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'done already', idempotencyKey: 'done-already' });
    expect((await finished(p, id)).state).toBe('COMPLETED');
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
    expect(await p.journal.followLeaseRemainingMs(ref(id))).toBe(0);
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('SubscribeToTask')).toBe(0);
    expect(await metric(fleet.metrics.sends)).toBe(1);
    expect(await redis().get(p.journal.keys.taskOwner(agent.cardUrl, 'T-DONE'))).toBe(indexMember(id, 'main.1'));
  }, 20_000);

  it('scripts flushed (NOSCRIPT) just before the stream\'s finishing event: the follow lease is still given back', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: async () => {
          await redis().call('SCRIPT', 'FLUSH');
          return { sse: [taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'done' } }))], endAfter: 'hang' };
        },
      }),
      QUIET,
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'flush at the end', idempotencyKey: 'flush-end' });
    await completedAndFollowEnded(p, fleet, id);
    expect(await p.journal.followLeaseRemainingMs(ref(id))).toBe(0);
    expect(agent.count('SendMessage')).toBe(1);
  }, 20_000);

  it("the in-script task bind with an owner full of ':' and '|' (journal level, ids the producer would refuse): bound whole, idempotent, refused for another", async () => {
    const journal = new Journal(redis(), { prefix: 'attack-bind', retentionMs: 60_000 });
    const workflowId = `w:${'|:'.repeat(2_000)}here:1:x`;
    const other = `${workflowId}-other`;
    for (const id of [workflowId, other]) await journal.createWorkflow(id, { state: 'RUNNING', definition: '{}', createdAt: '1', updatedAt: '1' }, intentRow(id));
    const agentCardUrl = intentRow(workflowId).agentCardUrl;
    const change = { mode: 'event' as const, state: 'SUBMITTED' as const, taskId: 'T:|1', agentCardUrl };
    expect((await journal.applyStatus({ workflowId, delegationId: 'main.1' }, change)).applied).toBe(true);
    expect(await redis().get(journal.keys.taskOwner(agentCardUrl, 'T:|1'))).toBe(indexMember(workflowId, 'main.1'));
    expect(await redis().pttl(journal.keys.taskOwner(agentCardUrl, 'T:|1'))).toBeGreaterThan(60_000);
    await expect(journal.applyStatus({ workflowId: other, delegationId: 'main.1' }, change)).rejects.toMatchObject({ code: 'TASK_BOUND_ELSEWHERE' });
    expect((await journal.getDelegation({ workflowId: other, delegationId: 'main.1' }))?.taskId).toBeUndefined();
    expect(await redis().get(journal.keys.taskOwner(agentCardUrl, 'T:|1'))).toBe(indexMember(workflowId, 'main.1'));
  });

  it('a renewal issued before the finishing change that meets NOSCRIPT (failover) and goes again with EVAL after it: the lease it takes back is given back', async () => {
    const applyStatusLua = scriptText('applyStatus');
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: async () => {
          // A server that lost its scripts and has only applyStatus again (another worker's EVAL loaded it): the
          // renewal's EVALSHA is refused (NOSCRIPT) and retried with EVAL; the finishing change's EVALSHA runs.
          await redis().call('SCRIPT', 'FLUSH');
          await redis().call('SCRIPT', 'LOAD', applyStatusLua);
          // Writes wait: a renewal tick (every second) is issued into the pause before the finishing event is sent,
          // and (most often) none after it before the pause ends: the holder counts no renewal behind its change.
          await redis().call('CLIENT', 'PAUSE', '1200', 'WRITE');
          await new Promise((resolve) => setTimeout(resolve, 1_050));
          return { sse: [taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'done' } }))], endAfter: 'hang' };
        },
      }),
      { lockDurationMs: 3_000, reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'noscript renewal', idempotencyKey: 'noscript-renewal' });
    await completedAndFollowEnded(p, fleet, id);
    const leaseKey = p.journal.keys.followLease(id, 'main.1');
    expect(await redis().get(leaseKey), `lease held with ${await redis().pttl(leaseKey)} ms left`).toBeNull();
  }, 20_000);

  it('createWorkflow whose index write is refused creates nothing (one server: the entries and the script in one round trip)', async () => {
    const journal = new Journal(redis(), { prefix: 'attack-create', retentionMs: 60_000 });
    const create = () => journal.createWorkflow('wf-orphan', { state: 'RUNNING', definition: '{}', createdAt: '1', updatedAt: '1' }, intentRow('wf-orphan'), 6_000);
    // A faulty index (WRONGTYPE): the ZADD is refused while the script, sent behind it, would still run.
    await redis().set(journal.keys.unfinished(), 'not a sorted set');
    await expect(create()).rejects.toThrow();
    await redis().del(journal.keys.unfinished());
    // Retried with the same id: created now (nothing was before), and indexed; a workflow created by the refused call
    // would answer 'existed' here, and nothing would ever look at it if the caller did not retry.
    expect(await create()).toBe(true);
    expect(await redis().zscore(journal.keys.unfinished(), indexMember('wf-orphan', 'main.1'))).not.toBeNull();
  });
});
