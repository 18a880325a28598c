import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Cluster } from 'ioredis';
import { isFinished, JOURNAL_STATES, Journal, JournalError, type JournalState } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let journal: Journal;
let counter = 0;
let ref: { workflowId: string; delegationId: string };

const intent = intentRow;

beforeEach(async () => {
  journal = new Journal(redis(), { prefix: `t${++counter}`, retentionMs: 60_000 });
  ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
  expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intent(ref.workflowId))).toBe(true);
});

const refusal = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(JournalError);
  return (error as JournalError).code;
};

describe('createWorkflow / createIntent', () => {
  it('is idempotent on workflowId and indexes the first intent before any I/O', async () => {
    expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intent(ref.workflowId))).toBe(false);
    expect(await journal.delegationIds(ref.workflowId)).toEqual(['main.1']);
    expect(await journal.dueDelegations(Infinity, 10)).toEqual([ref]);
    const record = await journal.getDelegation(ref);
    expect(record).toMatchObject({ state: 'INTENT', messageId: `m-${ref.workflowId}`, version: 1, fence: 0 });
  });

  it('createIntent: created, existed, workflow missing, version conflict', async () => {
    expect(await journal.createIntent(ref.workflowId, intent(ref.workflowId, 'main.2'), { expectedWorkflowVersion: 1 })).toBe(true);
    expect(await journal.createIntent(ref.workflowId, intent(ref.workflowId, 'main.2'))).toBe(false);
    expect(await refusal(journal.createIntent('nope', intent('nope', 'x.1')))).toBe('DELEGATION_MISSING');
    expect(await refusal(journal.createIntent(ref.workflowId, intent(ref.workflowId, 'main.3'), { expectedWorkflowVersion: 1 }))).toBe(
      'VERSION_CONFLICT',
    );
    expect(await journal.delegationIds(ref.workflowId)).toEqual(['main.1', 'main.2']);
  });
});

describe('claim and fencing', () => {
  it('each claim bumps the token; an older token is refused everywhere', async () => {
    const first = await journal.claim(ref, 'worker-a');
    const second = await journal.claim(ref, 'worker-b');
    expect(second).toBe(first + 1);
    expect(await refusal(journal.markSending(ref, first))).toBe('FENCE_LOST');
    expect(await refusal(journal.applyStatus(ref, { fence: first, mode: 'event', state: 'WORKING', taskId: 'T1' }))).toBe('FENCE_LOST');
    expect(await refusal(journal.applyArtifact(ref, first, { artifact: { artifactId: 'a1', parts: [{ text: 'x' }] } }))).toBe('FENCE_LOST');
    expect(await refusal(journal.markReply(ref, first, 'r1', 'sending'))).toBe('FENCE_LOST');
    expect(await refusal(journal.claim({ ...ref, delegationId: 'none' }, 'w'))).toBe('DELEGATION_MISSING');
  });
});

describe('markSending / releaseForResend', () => {
  it('marks once; a second mark says a send may have happened', async () => {
    const fence = await journal.claim(ref, 'w');
    await journal.markSending(ref, fence, { url: 'http://a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    expect(await refusal(journal.markSending(ref, fence))).toBe('MAY_HAVE_SENT');
    const record = await journal.getDelegation(ref);
    expect(record).toMatchObject({ sendCount: 1, agentInterface: { url: 'http://a' } });
    expect(record!.sendStartedAt).toBeGreaterThan(0);
    expect(await refusal(journal.releaseForResend(ref, record!.version - 1))).toBe('VERSION_CONFLICT');
    await journal.releaseForResend(ref, record!.version, { contextRefused: true });
    const released = await journal.getDelegation(ref);
    expect(released).toMatchObject({ sendStartedAt: undefined, resendCount: 1, contextRefused: true });
    await journal.markSending(ref, fence);
  });

  it('a release on a proven absence covers every send so far as counted (provenAbsentSends); one without proof leaves it', async () => {
    const error = { code: 'NETWORK_ERROR' as const, message: 'ECONNREFUSED', retryable: true, delivery: 'not-sent' as const };
    const fence = await journal.claim(ref, 'w');
    await journal.markSending(ref, fence);
    await journal.releaseForResend(ref, (await journal.getDelegation(ref))!.version);
    expect(await journal.getDelegation(ref)).toMatchObject({ sendCount: 1, resendCount: 1, provenAbsentSends: 0 });
    // A marked try that never left (counted in sendCount and unreachableCount), then a send that left.
    const mark = await journal.markSending(ref, fence);
    await journal.noteUnreachable(ref, fence, { error, nextTryAt: 5_000_000, marked: true, mark });
    await journal.markSending(ref, fence);
    const marked = (await journal.getDelegation(ref))!;
    expect(await refusal(journal.releaseForResend(ref, marked.version - 1, { provenAbsent: true }))).toBe('VERSION_CONFLICT');
    expect((await journal.getDelegation(ref))!.provenAbsentSends).toBe(0);
    await journal.releaseForResend(ref, marked.version, { provenAbsent: true });
    const released = (await journal.getDelegation(ref))!;
    expect(released).toMatchObject({ sendStartedAt: undefined, sendCount: 3, unreachableCount: 1, unsentTries: 0, resendCount: 2, provenAbsentSends: 2, version: marked.version + 1 });
    // A later release without proof keeps what the proof covered.
    await journal.markSending(ref, fence);
    await journal.releaseForResend(ref, (await journal.getDelegation(ref))!.version);
    expect(await journal.getDelegation(ref)).toMatchObject({ sendCount: 4, resendCount: 3, provenAbsentSends: 2 });
  });

  it('refuses to mark or release once a task is known', async () => {
    const fence = await journal.claim(ref, 'w');
    await journal.applyStatus(ref, { fence, mode: 'snapshot', state: 'SUBMITTED', taskId: 'T1' });
    expect(await refusal(journal.markSending(ref, fence))).toBe('WRONG_STATE');
    const record = await journal.getDelegation(ref);
    expect(await refusal(journal.releaseForResend(ref, record!.version))).toBe('WRONG_STATE');
  });
});

describe('noteUnreachable (noteUnreachable-1.lua)', () => {
  const error = { code: 'NETWORK_ERROR' as const, message: 'ECONNREFUSED on http://127.0.0.1:9/', retryable: true, delivery: 'not-sent' as const };
  it('an unmarked try: counted, since kept from the first, next try journaled; a marked row is refused (MAY_HAVE_SENT)', async () => {
    const before = (await journal.getDelegation(ref))!;
    const first = await journal.noteUnreachable(ref, before.fence, { error, nextTryAt: 5_000_000, marked: false });
    expect(first).toMatchObject({ version: before.version + 1, unreachableCount: 1 });
    const second = await journal.noteUnreachable(ref, before.fence, { error, nextTryAt: 6_000_000, marked: false });
    expect(second).toMatchObject({ version: before.version + 2, unreachableCount: 2, unreachableSince: first.unreachableSince });
    expect(await journal.getDelegation(ref)).toMatchObject({ state: 'INTENT', unreachableCount: 2, unsentTries: 2, nextTryAt: 6_000_000, error });
    await journal.markSending(ref, before.fence);
    expect(await refusal(journal.noteUnreachable(ref, before.fence, { error, nextTryAt: 7_000_000, marked: false }))).toBe('MAY_HAVE_SENT');
  });
  it('a marked try whose SendMessage never left clears the mark (the next try may send); fence, state and row are checked', async () => {
    const fence = (await journal.getDelegation(ref))!.fence;
    const first = await journal.markSending(ref, fence);
    // Without the run's own mark (its sendStartedAt and version), or with another one, nothing is cleared.
    expect(await refusal(journal.noteUnreachable(ref, fence, { error, nextTryAt: 5_000_000, marked: true }))).toBe('VERSION_CONFLICT');
    expect(await refusal(journal.noteUnreachable(ref, fence, { error, nextTryAt: 5_000_000, marked: true, mark: { ...first, markedVersion: first.markedVersion + 1 } }))).toBe('VERSION_CONFLICT');
    await journal.noteUnreachable(ref, fence, { error, nextTryAt: 5_000_000, marked: true, mark: first });
    const record = (await journal.getDelegation(ref))!;
    expect(record).toMatchObject({ unreachableCount: 1, unsentTries: 0, sendCount: 1 });
    expect(record.sendStartedAt).toBeUndefined();
    const second = await journal.markSending(ref, fence);
    expect(await refusal(journal.noteUnreachable(ref, fence + 1, { error, nextTryAt: 5_000_000, marked: true, mark: second }))).toBe('FENCE_LOST');
    await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1' });
    expect(await refusal(journal.noteUnreachable(ref, fence, { error, nextTryAt: 5_000_000, marked: true, mark: second }))).toBe('WRONG_STATE');
    expect(await refusal(journal.noteUnreachable({ ...ref, delegationId: 'none' }, 0, { error, nextTryAt: 5_000_000, marked: true, mark: second }))).toBe('DELEGATION_MISSING');
  });
});

describe('applyStatus', () => {
  it('moves forward, ignores duplicates, stale reads and regressions; finished never regresses (R12)', async () => {
    const at = (second: number) => `2026-01-01T10:00:0${second}.000Z`;
    expect(await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1', contextId: 'srv-1', statusTimestamp: at(1) })).toMatchObject({
      applied: true,
    });
    expect(await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1', statusTimestamp: at(1) })).toEqual({
      applied: false,
      reason: 'duplicate',
    });
    expect(await journal.applyStatus(ref, { mode: 'event', state: 'SUBMITTED', taskId: 'T1', statusTimestamp: at(2) })).toEqual({
      applied: false,
      reason: 'regress',
    });
    expect(await journal.applyStatus(ref, { mode: 'event', state: 'COMPLETED', taskId: 'T1', statusTimestamp: at(5) })).toMatchObject({ applied: true });
    expect(await journal.dueDelegations(Infinity, 10)).toEqual([ref]); // until the workflow has decided
    expect(await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: 'T1', statusTimestamp: at(1) })).toEqual({
      applied: false,
      reason: 'finished',
    });
    expect(await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1', statusTimestamp: at(6) })).toEqual({
      applied: false,
      reason: 'finished',
    });
    const record = await journal.getDelegation(ref);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1', contextId: 'srv-1' });
    expect(record!.finishedAt).toBeGreaterThan(0);
    // A finished delegation outlives every later decision about it: it expires with its workflow.
    expect(await redis().pttl(journal.keys.delegation(ref.workflowId, ref.delegationId))).toBe(-1);
  });

  it('the same state without a newer timestamp: a duplicate only with the same message; a new message (another challenge) replaces the status (property)', async () => {
    const challenge = (text: string) => ({ messageId: `m-${text}`, role: 'ROLE_AGENT' as const, parts: [{ text }] });
    const texts = fc.constantFrom('sign in', 'sign in again', 'sign in once more');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('WORKING', 'AUTH_REQUIRED', 'INPUT_REQUIRED') as fc.Arbitrary<'WORKING' | 'AUTH_REQUIRED' | 'INPUT_REQUIRED'>, texts, texts, fc.boolean(), async (state, first, second, timestamped) => {
        const target = { workflowId: `dup-${++counter}`, delegationId: 'main.1' };
        await journal.createWorkflow(target.workflowId, { state: 'RUNNING' }, intentRow(target.workflowId));
        const statusTimestamp = timestamped ? { statusTimestamp: '2026-01-01T10:00:01.000Z' } : {};
        expect(await journal.applyStatus(target, { mode: 'event', state, taskId: `T-${counter}`, agentCardUrl: 'http://agent.example/card', statusMessage: challenge(first), ...statusTimestamp })).toMatchObject({ applied: true });
        const again = await journal.applyStatus(target, { mode: 'event', state, taskId: `T-${counter}`, statusMessage: challenge(second), ...statusTimestamp });
        if (first === second) expect(again).toEqual({ applied: false, reason: 'duplicate' });
        else {
          expect(again).toMatchObject({ applied: true });
          expect((await journal.getDelegationView(target))!.statusMessage?.parts[0]?.text).toBe(second);
        }
      }),
      { numRuns: 30 },
    );
  });

  it('ignores an older timestamp within the same rank', async () => {
    await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusTimestamp: '2026-01-01T10:00:05Z' });
    expect(await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1', statusTimestamp: '2026-01-01T10:00:01Z' })).toEqual({
      applied: false,
      reason: 'stale',
    });
  });

  it('persists the question while parked and clears it when work resumes', async () => {
    const question = { messageId: 'q1', role: 'ROLE_AGENT' as const, parts: [{ text: 'two rooms or one?' }] };
    await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusMessage: question, statusTimestamp: '2026-01-01T10:00:01Z' });
    expect((await journal.getDelegation(ref))!.question).toEqual(question);
    await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1', statusTimestamp: '2026-01-01T10:00:02Z' });
    expect((await journal.getDelegation(ref))!.question).toBeUndefined();
  });

  it('refuses another task id, a wrong version and a missing row', async () => {
    await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1' });
    expect(await refusal(journal.applyStatus(ref, { mode: 'event', state: 'COMPLETED', taskId: 'T2' }))).toBe('TASK_MISMATCH');
    expect(await refusal(journal.applyStatus(ref, { mode: 'event', state: 'COMPLETED', expectedVersion: 1 }))).toBe('VERSION_CONFLICT');
    expect(await refusal(journal.applyStatus({ ...ref, delegationId: 'none' }, { mode: 'event', state: 'COMPLETED' }))).toBe('DELEGATION_MISSING');
  });

  it('a finished snapshot replaces the artifacts; a running one is merged in (what it leaves out is kept, named in leftOut)', async () => {
    await journal.applyArtifact(ref, undefined, { artifact: { artifactId: 'old', parts: [{ text: 'x' }] } });
    const running = await journal.applyStatus(ref, {
      mode: 'snapshot',
      state: 'WORKING',
      taskId: 'T1',
      artifacts: [{ artifactId: 'a1', name: 'result', parts: [{ text: 'draft' }] }],
    });
    expect(running).toMatchObject({ applied: true, leftOut: ['old'] });
    expect((await journal.getDelegationView(ref))!.artifacts).toEqual([
      { artifactId: 'a1', name: 'result', parts: [{ text: 'draft' }] },
      { artifactId: 'old', parts: [{ text: 'x' }] },
    ]);
    const done = await journal.applyStatus(ref, {
      mode: 'snapshot',
      state: 'COMPLETED',
      taskId: 'T1',
      artifacts: [{ artifactId: 'a1', name: 'result', parts: [{ text: 'full' }] }],
    });
    expect(done).toMatchObject({ applied: true, leftOut: ['old'] });
    expect((await journal.getDelegationView(ref))!.artifacts).toEqual([{ artifactId: 'a1', name: 'result', parts: [{ text: 'full' }] }]);
  });
});

describe('applyStatus binds a new task id with the change that records it', () => {
  const card = 'http://agent.example/.well-known/agent-card.json';
  const owner = (taskId: string) => redis().get(journal.keys.taskOwner(card, taskId));

  it('binds exactly when the change records it: a refused or ignored change binds nothing; bound elsewhere: -8, nothing written', async () => {
    // Refused (fence) and ignored (finished) changes leave the task id free (on a Cluster it is bound first: another slot).
    const oneServer = !redis().isCluster;
    expect(await refusal(journal.applyStatus(ref, { fence: 7, mode: 'snapshot', state: 'SUBMITTED', taskId: 'T1', agentCardUrl: card }))).toBe('FENCE_LOST');
    if (oneServer) expect(await owner('T1')).toBeNull();
    const other = { workflowId: ref.workflowId, delegationId: 'main.2' };
    await journal.createIntent(ref.workflowId, intent(ref.workflowId, 'main.2'));
    await journal.applyStatus(other, { mode: 'outcome', state: 'FAILED' });
    expect(await journal.applyStatus(other, { mode: 'snapshot', state: 'SUBMITTED', taskId: 'T2', agentCardUrl: card })).toMatchObject({ applied: false, reason: 'finished' });
    if (oneServer) expect(await owner('T2')).toBeNull();
    // Recorded: bound to `workflowId|delegationId` (bindTask's owner), with bindTask's TTL (twice the retention).
    expect((await journal.applyStatus(ref, { mode: 'snapshot', state: 'SUBMITTED', taskId: 'T1', agentCardUrl: card })).applied).toBe(true);
    expect(await owner('T1')).toBe(`${ref.workflowId}|main.1`);
    const ttl = await redis().pttl(journal.keys.taskOwner(card, 'T1'));
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(120_000);
    // Another delegation naming T1: refused, typed, journaled as a protocol error; the row keeps no task id.
    const third = { workflowId: ref.workflowId, delegationId: 'main.3' };
    await journal.createIntent(ref.workflowId, intent(ref.workflowId, 'main.3'));
    expect(await refusal(journal.applyStatus(third, { mode: 'snapshot', state: 'WORKING', taskId: 'T1', agentCardUrl: card }))).toBe('TASK_BOUND_ELSEWHERE');
    const refused = (await journal.getDelegation(third))!;
    expect(refused).toMatchObject({ state: 'INTENT', protocolError: { code: 'TASK_BOUND_ELSEWHERE' } });
    expect(refused.taskId).toBeUndefined();
    expect(await owner('T1')).toBe(`${ref.workflowId}|main.1`);
    // A binding made first by bindTask (a Cluster, or an older release mid-deploy) is the same owner: the change applies.
    await journal.bindTask(third, card, 'T3');
    expect((await journal.applyStatus(third, { mode: 'snapshot', state: 'WORKING', taskId: 'T3', agentCardUrl: card })).applied).toBe(true);
  });

  it('bound elsewhere (-8) with a lease: the send lease (always) is given back, a follow lease (finished) is kept', async () => {
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'SUBMITTED', taskId: 'T1', agentCardUrl: card });
    const other = { workflowId: ref.workflowId, delegationId: 'main.2' };
    await journal.createIntent(ref.workflowId, intent(ref.workflowId, 'main.2'));
    expect(await journal.lease(other, 'acquire', 'holder', 5_000)).toBe(true);
    expect(await refusal(journal.applyStatus(other, { mode: 'snapshot', state: 'WORKING', taskId: 'T1', agentCardUrl: card, endsLease: { token: 'holder', when: 'finished' } }))).toBe('TASK_BOUND_ELSEWHERE');
    expect(await journal.followLeaseRemainingMs(other)).toBeGreaterThan(0);
    expect(await refusal(journal.applyStatus(other, { mode: 'snapshot', state: 'WORKING', taskId: 'T1', agentCardUrl: card, endsLease: { token: 'holder', when: 'always' } }))).toBe('TASK_BOUND_ELSEWHERE');
    // On one server the script gives it back with the refusal; on a Cluster the bind refuses first and the caller releases.
    if (!redis().isCluster) expect(await journal.followLeaseRemainingMs(other)).toBe(0);
  });
});

describe('applyStatus: the workflow at finish', () => {
  it('a finishing transition returns the workflow row and its delegation ids as it read them; an unfinished one does not', async () => {
    const definition = { workflowId: 'at-finish', steps: [{ name: 'main', agent: 'http://agent.example/.well-known/agent-card.json', message: { text: 'book a flight' } }] };
    ref = { workflowId: 'at-finish', delegationId: 'main.1' };
    await journal.createWorkflow(ref.workflowId, { state: 'RUNNING', definition: JSON.stringify(definition), createdAt: '1000', updatedAt: '1000' }, intent(ref.workflowId));
    await journal.createIntent(ref.workflowId, intent(ref.workflowId, 'main.2'));
    const working = await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1' });
    expect(working.applied && working.finishedWorkflow).toBeUndefined();
    const finished = await journal.applyStatus(ref, { mode: 'event', state: 'COMPLETED', taskId: 'T1' });
    if (!finished.applied) throw new Error('not applied');
    expect(finished.finishedWorkflow?.delegationIds).toEqual(['main.1', 'main.2']);
    const workflow = await journal.getWorkflow(ref.workflowId);
    expect(finished.finishedWorkflow?.record).toEqual(workflow);
    // Ignored (already finished): nothing returned.
    expect(await journal.applyStatus(ref, { mode: 'event', state: 'FAILED', taskId: 'T1' })).toEqual({ applied: false, reason: 'finished' });
    // The workflow row gone (expired): nothing to return, the settle reads (and finds nothing).
    await redis().del(journal.keys.workflow(ref.workflowId));
    const other = await journal.applyStatus({ workflowId: ref.workflowId, delegationId: 'main.2' }, { mode: 'event', state: 'COMPLETED', taskId: 'T2' });
    expect(other.applied && other.finishedWorkflow).toBeUndefined();
  });
});

describe('applyArtifact (R09, R10)', () => {
  const text = (t: string) => [{ text: t }];
  it('replace, append, append to an unknown id, seal, drop after the seal', async () => {
    const apply = (artifactId: string, t: string, append: boolean, lastChunk: boolean) =>
      journal.applyArtifact(ref, undefined, { artifact: { artifactId, parts: text(t) }, append, lastChunk });
    expect(await apply('a1', 'Hel', false, false)).toBe('applied');
    expect(await apply('a1', 'lo', true, false)).toBe('applied');
    expect(await apply('a2', 'x', true, false)).toBe('applied');
    expect(await apply('a1', 'Hello', false, true)).toBe('applied');
    expect(await apply('a1', '!!', true, false)).toBe('sealed');
    const view = await journal.getDelegationView(ref);
    const joined = (id: string) => view!.artifacts.find((a) => a.artifactId === id)!.parts.map((p) => p.text).join('');
    expect(joined('a1')).toBe('Hello');
    expect(joined('a2')).toBe('x');
    expect(view!.artifacts.map((a) => a.artifactId)).toEqual(['a1', 'a2']);
  });

  it('an empty append only seals (a bare end-of-artifact chunk)', async () => {
    await journal.applyArtifact(ref, undefined, { artifact: { artifactId: 'a1', parts: text('hello') }, append: false });
    expect(await journal.applyArtifact(ref, undefined, { artifact: { artifactId: 'a1', parts: [] }, append: true, lastChunk: true })).toBe('applied');
    expect((await journal.getDelegationView(ref))!.artifacts).toEqual([{ artifactId: 'a1', parts: [{ text: 'hello' }] }]);
    expect(await journal.applyArtifact(ref, undefined, { artifact: { artifactId: 'a1', parts: text('late') }, append: true })).toBe('sealed');
  });

  it('drops updates to a finished delegation', async () => {
    await journal.applyStatus(ref, { mode: 'event', state: 'COMPLETED', taskId: 'T1' });
    expect(await journal.applyArtifact(ref, undefined, { artifact: { artifactId: 'a1', parts: text('late') } })).toBe('finished');
  });
});

describe('noteNotFound / recordReply', () => {
  it('counts not-found answers and a successful read resets the count', async () => {
    await journal.applyStatus(ref, { mode: 'event', state: 'SUBMITTED', taskId: 'T1' });
    expect((await journal.noteNotFound(ref)).count).toBe(1);
    expect((await journal.noteNotFound(ref)).count).toBe(2);
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: 'T1' });
    expect((await journal.getDelegation(ref))!.notFoundCount).toBe(0);
    expect(await refusal(journal.noteNotFound({ ...ref, delegationId: 'none' }))).toBe('DELEGATION_MISSING');
  });

  it('questions without message id or timestamp still get their own identity (a second question can be answered)', async () => {
    const ask = (text: string) => journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusMessage: { messageId: '', role: 'ROLE_AGENT', parts: [{ text }] } as never });
    await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1' });
    expect(await journal.recordReply(ref, 'r1', { parts: [{ text: 'a' }] })).toEqual({ messageId: 'r1', created: true });
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: 'T1' });
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'INPUT_REQUIRED', taskId: 'T1' });
    expect(await journal.recordReply(ref, 'r2', { parts: [{ text: 'b' }] })).toEqual({ messageId: 'r2', created: true });
    void ask;
  });

  it('journals one reply per question; answering twice is harmless', async () => {
    expect(await refusal(journal.recordReply(ref, 'r0', { parts: [{ text: 'two' }] }))).toBe('WRONG_STATE');
    await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusTimestamp: '2026-01-01T10:00:01Z' });
    expect(await journal.recordReply(ref, 'r1', { parts: [{ text: 'two' }] })).toEqual({ messageId: 'r1', created: true });
    expect(await journal.recordReply(ref, 'r2', { parts: [{ text: 'one' }] })).toEqual({ messageId: 'r1', created: false, same: false });
    const fence = await journal.claim(ref, 'w');
    expect(await journal.markReply(ref, fence, 'r1', 'sending')).toBe(true);
    expect(await journal.markReply(ref, fence, 'r1', 'sending')).toBe(false);
    expect(await journal.markReply(ref, fence, 'r1', 'sent')).toBe(true);
    expect(await journal.markReply(ref, fence, 'r1', 'sent')).toBe(false);
    expect(await journal.markReply(ref, fence, 'other', 'sent')).toBe(false);
    expect(await refusal(journal.recordReply({ ...ref, delegationId: 'none' }, 'r', { parts: [] }))).toBe('DELEGATION_MISSING');
  });
});

describe('updateWorkflow', () => {
  it('compare-and-set on version; a finished workflow never changes', async () => {
    const version = await journal.updateWorkflow(ref.workflowId, { state: 'RUNNING' }, 1);
    expect(version).toBe(2);
    expect(await refusal(journal.updateWorkflow(ref.workflowId, { state: 'FAILED' }, 1))).toBe('VERSION_CONFLICT');
    await journal.updateWorkflow(ref.workflowId, { state: 'COMPLETED' }, version);
    expect(await refusal(journal.updateWorkflow(ref.workflowId, { state: 'RUNNING' }))).toBe('WRONG_STATE');
    expect(await refusal(journal.updateWorkflow('none', { state: 'RUNNING' }))).toBe('DELEGATION_MISSING');
    expect(await redis().pttl(journal.keys.workflow(ref.workflowId))).toBeGreaterThan(0);
    for (const key of [journal.keys.delegation(ref.workflowId, ref.delegationId), journal.delegationListKey(ref.workflowId)]) {
      expect(await redis().pttl(key)).toBeGreaterThan(0);
    }
  });
});

describe('follow lease', () => {
  it('one holder at a time; renew and release only by the holder', async () => {
    expect(await journal.lease(ref, 'acquire', 'a', 5_000)).toBe(true);
    expect(await journal.lease(ref, 'acquire', 'b', 5_000)).toBe(false);
    expect(await journal.lease(ref, 'acquire', 'a', 5_000)).toBe(true);
    expect(await journal.lease(ref, 'renew', 'b', 5_000)).toBe(false);
    expect(await journal.lease(ref, 'release', 'b')).toBe(false);
    expect(await journal.isFollowed(ref)).toBe(true);
    expect(await journal.lease(ref, 'renew', 'a', 5_000)).toBe(true);
    expect(await journal.lease(ref, 'release', 'a')).toBe(true);
    expect(await journal.isFollowed(ref)).toBe(false);
  });

  it('renewLeases: renews a lease still ours, takes back one that ran out, never one someone else holds', async () => {
    const other = { workflowId: ref.workflowId, delegationId: 'other.1' };
    const third = { workflowId: ref.workflowId, delegationId: 'third.1' };
    expect(await journal.lease(ref, 'acquire', 'a', 5_000)).toBe(true);
    expect(await journal.lease(third, 'acquire', 'b', 5_000)).toBe(true);
    // Unfinished rows (a lease of a finished or gone row is not renewed: below).
    for (const row of [other, third]) await redis().hset(journal.keys.delegation(row.workflowId, row.delegationId), 'state', 'WORKING');
    // `other`: a's lease ran out (nobody holds it); `third`: b holds it.
    const renewals = await journal.renewLeases([{ ref, token: 'a' }, { ref: other, token: 'a' }, { ref: third, token: 'a' }], 7_000, () => 1);
    expect(renewals.map(({ lease }) => lease)).toEqual(['renewed', 'retaken', 'lost']);
    expect(await redis().get(journal.keys.followLease(other.workflowId, other.delegationId))).toBe('a');
    expect(await redis().pttl(journal.keys.followLease(ref.workflowId, ref.delegationId))).toBeGreaterThan(5_000);
    expect(await redis().get(journal.keys.followLease(third.workflowId, third.delegationId))).toBe('b');
  });

  it('renewLeases: says, from the same script, whether a row still ours keeps suspects (pending or counted lost), with its failed read rounds and when the last ended; never for a lease lost', async () => {
    const renewals = async (token = 'a') => (await journal.renewLeases([{ ref, token }], 7_000, () => 1))[0];
    const none = { suspectReadRounds: 0 };
    expect(await journal.lease(ref, 'acquire', 'a', 5_000)).toBe(true);
    expect(await renewals()).toEqual({ lease: 'renewed', keepsSuspects: false, ...none });
    expect(await journal.noteSuspect(ref, 'T2')).toBe('kept');
    expect(await renewals()).toEqual({ lease: 'renewed', keepsSuspects: true, ...none });
    expect(await renewals('b')).toEqual({ lease: 'lost', keepsSuspects: false, ...none });
    // A round that could not read T2: counted, timed; the renewal tick waits for its backoff (lease-renewal.ts).
    expect(await journal.clearSuspects(ref, { unread: ['T2'] }, 3, 1_234_567)).toEqual({ pending: 1, lost: 0, rounds: 1 });
    expect(await renewals()).toEqual({ lease: 'renewed', keepsSuspects: true, suspectReadRounds: 1, suspectReadRoundAt: 1_234_567 });
    expect((await journal.getDelegation(ref))!).toMatchObject({ suspectReadRounds: 1, suspectReadRoundAt: 1_234_567 });
    expect(await journal.clearSuspects(ref, { read: ['T2'] })).toMatchObject({ pending: 0, lost: 0 });
    expect(await renewals()).toEqual({ lease: 'renewed', keepsSuspects: false, ...none });
    expect((await journal.getDelegation(ref))!.suspectReadRoundAt).toBeUndefined();
    expect(await journal.noteSuspect(ref, 'T'.repeat(2_000))).toBe('too-long');
    expect(await renewals()).toEqual({ lease: 'renewed', keepsSuspects: true, ...none });
  });

  it('renewLeases: a lease whose delegation is finished or gone (compacted) is not renewed (finished), whoever holds it (attack 27)', async () => {
    const gone = { workflowId: ref.workflowId, delegationId: 'gone.1' };
    expect(await journal.lease(ref, 'acquire', 'a', 5_000)).toBe(true);
    expect(await journal.lease(gone, 'acquire', 'a', 5_000)).toBe(true);
    await redis().hset(journal.keys.delegation(ref.workflowId, ref.delegationId), 'state', 'COMPLETED');
    expect((await journal.renewLeases([{ ref, token: 'a' }, { ref, token: 'b' }, { ref: gone, token: 'a' }], 7_000, () => 1)).map(({ lease }) => lease)).toEqual(['finished', 'finished', 'finished']);
    expect(await redis().pttl(journal.keys.followLease(ref.workflowId, ref.delegationId))).toBeLessThanOrEqual(5_000);
  });

  it('property: renewLeases answers finished exactly for the finished journal states and a gone row, and renews (or takes back) every other', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<string>(...JOURNAL_STATES, 'GONE'), fc.boolean(), async (state, held) => {
        const row = { workflowId: ref.workflowId, delegationId: `p${++counter}.1` };
        // GONE: no row at all (a finished workflow's rows are compacted away).
        if (state !== 'GONE') await redis().hset(journal.keys.delegation(row.workflowId, row.delegationId), 'state', state);
        if (held) expect(await journal.lease(row, 'acquire', 'a', 5_000)).toBe(true);
        const [renewal] = await journal.renewLeases([{ ref: row, token: 'a' }], 7_000, () => 1);
        expect(renewal!.lease).toBe(state === 'GONE' || isFinished(state as JournalState) ? 'finished' : held ? 'renewed' : 'retaken');
      }),
      { examples: [['COMPLETED', true], ['AMBIGUOUS', false], ['LOST', true], ['WORKING', true], ['INPUT_REQUIRED', false], ['GONE', true]] },
    );
  });
});

describe('send lease taken by the mark; takeFollow', () => {
  it('markSending with a holder token takes the lease in the same script; a lease held elsewhere is reported, the mark still written', async () => {
    const fence = await journal.claim(ref, 'w/send/1');
    const marked = await journal.markSending(ref, fence, undefined, { token: 'w/send/1', durationMs: 5_000 });
    expect(marked.leaseHeld).toBe(true);
    // The mark's time as written: where the reconciler's sendSettleMs (and the sender's stall guard) start.
    expect(marked.sendStartedAt).toBe((await journal.getDelegation(ref))?.sendStartedAt);
    expect(await journal.followLeaseRemainingMs(ref)).toBeGreaterThan(4_000);
    // Only the holder gives it back; another holder cannot take it meanwhile.
    expect(await journal.lease(ref, 'acquire', 'someone-else', 5_000)).toBe(false);
    expect(await journal.lease(ref, 'release', 'w/send/1')).toBe(true);

    const other = { workflowId: ref.workflowId, delegationId: 'main.2' };
    await journal.createIntent(ref.workflowId, intent(ref.workflowId, 'main.2'));
    expect(await journal.lease(other, 'acquire', 'follower', 5_000)).toBe(true);
    const otherFence = await journal.claim(other, 'w/send/2');
    expect(await journal.markSending(other, otherFence, undefined, { token: 'w/send/2', durationMs: 5_000 })).toMatchObject({ leaseHeld: false });
    expect((await journal.getDelegation(other))?.sendStartedAt).toBeTypeOf('number');
    expect(await journal.lease(other, 'release', 'follower')).toBe(true);
  });

  it('markSending with claim: claims for the holder in the same script, from the fence read; a run that read an older one is refused', async () => {
    const read = (await journal.getDelegation(ref))!;
    expect(read.fence).toBe(0);
    const marked = await journal.markSending(ref, read.fence, undefined, { token: 'w/send/1', durationMs: 5_000, claim: true });
    expect(marked).toMatchObject({ leaseHeld: true, fence: 1 });
    expect((await journal.getDelegation(ref))?.fence).toBe(1);
    expect(await redis().hget(journal.keys.delegation(ref.workflowId, ref.delegationId), 'owner')).toBe('w/send/1');
    // A fenced write of the claiming run passes; one with the fence read before the claim is refused.
    expect((await journal.applyStatus(ref, { fence: 1, mode: 'outcome', state: 'INTENT', error: { code: 'INTERNAL_ERROR', message: 'x', retryable: true } })).applied).toBe(true);
    expect(await refusal(journal.applyStatus(ref, { fence: 0, mode: 'outcome', state: 'FAILED' }))).toBe('FENCE_LOST');

    // Two runs that read the same fence: the first to mark claims, the other is refused and marks nothing.
    const other = { workflowId: ref.workflowId, delegationId: 'main.2' };
    await journal.createIntent(ref.workflowId, intent(ref.workflowId, 'main.2'));
    const fenceRead = (await journal.getDelegation(other))!.fence;
    await journal.markSending(other, fenceRead, undefined, { token: 'w/send/a', durationMs: 5_000, claim: true });
    expect(await refusal(journal.markSending(other, fenceRead, undefined, { token: 'w/send/b', durationMs: 5_000, claim: true }))).toBe('FENCE_LOST');
    expect(await journal.getDelegation(other)).toMatchObject({ fence: fenceRead + 1, sendCount: 1 });
    expect(await redis().hget(journal.keys.delegation(other.workflowId, other.delegationId), 'owner')).toBe('w/send/a');
  });

  it('markSending with claim after releaseForResend: the resend run (fresh read) claims; a run that read before the first mark is refused and marks nothing', async () => {
    const stale = (await journal.getDelegation(ref))!;
    const first = await journal.markSending(ref, stale.fence, undefined, { token: 'w/send/1', durationMs: 5_000, claim: true });
    await journal.lease(ref, 'release', 'w/send/1');
    // The reconciler proved the message absent: the mark is cleared, the fence is not.
    await journal.releaseForResend(ref, (await journal.getDelegation(ref))!.version);
    const released = (await journal.getDelegation(ref))!;
    expect(released).toMatchObject({ sendStartedAt: undefined, fence: first.fence });
    // A run that read the row before the first mark (a stalled send run) is refused, even though the mark is gone.
    expect(await refusal(journal.markSending(ref, stale.fence, undefined, { token: 'w/send/stale', durationMs: 5_000, claim: true }))).toBe('FENCE_LOST');
    expect(await refusal(journal.applyStatus(ref, { fence: stale.fence, mode: 'outcome', state: 'FAILED' }))).toBe('FENCE_LOST');
    // The resend's run reads the row after the release: its mark passes on the happy path and claims.
    const resend = await journal.markSending(ref, released.fence, undefined, { token: 'w/send/2', durationMs: 5_000, claim: true });
    expect(resend).toMatchObject({ leaseHeld: true, fence: first.fence + 1 });
    expect(await journal.getDelegation(ref)).toMatchObject({ sendCount: 2, resendCount: 1, fence: first.fence + 1 });
  });

  it('a refused mark takes no lease', async () => {
    const fence = await journal.claim(ref, 'w/send/1');
    expect(await refusal(journal.markSending(ref, fence - 1, undefined, { token: 'w/send/1', durationMs: 5_000 }))).toBe('FENCE_LOST');
    expect(await journal.isFollowed(ref)).toBe(false);
  });

  it('takeFollow claims only with the lease: a follow turned away fences nobody out; a missing delegation leaves no lease', async () => {
    const holderFence = await journal.takeFollow(ref, 'holder', 5_000);
    expect(holderFence).toBe(1);
    expect(await journal.takeFollow(ref, 'intruder', 5_000)).toBe(0);
    expect((await journal.getDelegation(ref))?.fence).toBe(holderFence);
    // The holder again (a retried start): the lease is extended and the delegation claimed anew.
    expect(await journal.takeFollow(ref, 'holder', 5_000)).toBe(holderFence + 1);
    const missing = { workflowId: ref.workflowId, delegationId: 'main.9' };
    expect(await refusal(journal.takeFollow(missing, 'holder', 5_000))).toBe('DELEGATION_MISSING');
    expect(await journal.isFollowed(missing)).toBe(false);
  });
});

describe('applyStatus ends a lease in the same script (endsLease)', () => {
  it("'always' gives the holder's lease back on every outcome, applied or not; never another holder's", async () => {
    expect(await journal.lease(ref, 'acquire', 'sender', 5_000)).toBe(true);
    const applied = await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: 't1', agentCardUrl: 'http://agent.example/card', endsLease: { token: 'sender', when: 'always' } });
    expect(applied.applied).toBe(true);
    expect(await journal.isFollowed(ref)).toBe(false);
    // Not applied (a duplicate): still given back.
    expect(await journal.lease(ref, 'acquire', 'sender', 5_000)).toBe(true);
    const duplicate = await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 't1', endsLease: { token: 'sender', when: 'always' } });
    expect(duplicate).toEqual({ applied: false, reason: 'duplicate' });
    expect(await journal.isFollowed(ref)).toBe(false);
    // Refused (another task id: an error): still given back.
    expect(await journal.lease(ref, 'acquire', 'sender', 5_000)).toBe(true);
    expect(await refusal(journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 't2', endsLease: { token: 'sender', when: 'always' } }))).toBe('TASK_MISMATCH');
    expect(await journal.isFollowed(ref)).toBe(false);
    // Someone else's lease is never touched.
    expect(await journal.lease(ref, 'acquire', 'follower', 5_000)).toBe(true);
    await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', statusTimestamp: '2026-01-01T00:00:01Z', taskId: 't1', endsLease: { token: 'sender', when: 'always' } });
    expect(await journal.followLeaseRemainingMs(ref)).toBeGreaterThan(4_000);
  });

  it("'finished' keeps the lease while the task works and gives it back when the row is (or already was) finished", async () => {
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: 't1', agentCardUrl: 'http://agent.example/card' });
    expect(await journal.lease(ref, 'acquire', 'follower', 5_000)).toBe(true);
    const ends = { token: 'follower', when: 'finished' as const };
    await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 't1', endsLease: ends });
    await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', statusTimestamp: '2026-01-01T00:00:02Z', taskId: 't1', endsLease: ends });
    expect(await journal.followLeaseRemainingMs(ref)).toBeGreaterThan(4_000);
    const finished = await journal.applyStatus(ref, { mode: 'event', state: 'COMPLETED', taskId: 't1', endsLease: ends });
    expect(finished.applied).toBe(true);
    expect(await journal.isFollowed(ref)).toBe(false);
    // A late event for a finished row (not applied): the lease taken meanwhile is given back too.
    expect(await journal.lease(ref, 'acquire', 'follower', 5_000)).toBe(true);
    expect(await journal.applyStatus(ref, { mode: 'event', state: 'COMPLETED', taskId: 't1', endsLease: ends })).toEqual({ applied: false, reason: 'finished' });
    expect(await journal.isFollowed(ref)).toBe(false);
    // Another holder's lease stays, finished or not.
    expect(await journal.lease(ref, 'acquire', 'other', 5_000)).toBe(true);
    await journal.applyStatus(ref, { mode: 'event', state: 'FAILED', taskId: 't1', endsLease: ends });
    expect(await journal.followLeaseRemainingMs(ref)).toBeGreaterThan(4_000);
  });

  it("'finished': a snapshot rewritten to AMBIGUOUS (over the artifact limit) and a row gone give it back; a refused change keeps it", async () => {
    const limited = new Journal(redis(), { prefix: `t${counter}`, retentionMs: 60_000, artifactBytesPerDelegation: 100 });
    const fence = await limited.claim(ref, 'follower');
    await limited.applyStatus(ref, { fence, mode: 'snapshot', state: 'WORKING', taskId: 't1', agentCardUrl: 'http://agent.example/card' });
    expect(await limited.lease(ref, 'acquire', 'follower', 5_000)).toBe(true);
    const ends = { token: 'follower', when: 'finished' as const };
    // Fenced out: refused, the row unfinished, the lease kept.
    expect(await refusal(limited.applyStatus(ref, { fence: fence - 1, mode: 'event', state: 'COMPLETED', taskId: 't1', endsLease: ends }))).toBe('FENCE_LOST');
    expect(await limited.followLeaseRemainingMs(ref)).toBeGreaterThan(4_000);
    // A WORKING snapshot over the limit ends AMBIGUOUS (a person decides, A31): the row is finished, the lease given back.
    const artifacts = [{ artifactId: 'a1', parts: [{ text: 'x'.repeat(1_000) }] }];
    const rewritten = await limited.applyStatus(ref, { fence, mode: 'snapshot', state: 'WORKING', taskId: 't1', artifacts, endsLease: ends });
    expect(rewritten.applied && rewritten.record?.state).toBe('AMBIGUOUS');
    expect(await limited.isFollowed(ref)).toBe(false);
    // The row gone (expired, not compacted): refused, and the lease given back.
    expect(await limited.lease(ref, 'acquire', 'follower', 5_000)).toBe(true);
    await redis().del(limited.keys.delegation(ref.workflowId, ref.delegationId));
    expect(await refusal(limited.applyStatus(ref, { mode: 'event', state: 'COMPLETED', taskId: 't1', endsLease: ends }))).toBe('DELEGATION_MISSING');
    expect(await limited.isFollowed(ref)).toBe(false);
  });
});

describe('scripts run by digest', () => {
  it('a server that lost its scripts (SCRIPT FLUSH: restarted, failed over) runs them again, one call and in a batch', async () => {
    await redis().script('FLUSH');
    expect(await journal.claim(ref, 'after-flush')).toBe(1);
    await redis().script('FLUSH');
    expect(await journal.lease(ref, 'acquire', 'holder', 5_000)).toBe(true);
    await redis().script('FLUSH');
    expect(await journal.lease(ref, 'renew', 'holder', 5_000)).toBe(true);
    await redis().script('FLUSH');
    expect((await journal.renewLeases([{ ref, token: 'holder' }, { ref, token: 'not-the-holder' }], 5_000, () => 1)).map(({ lease }) => lease)).toEqual(['renewed', 'lost']);
  });
});

describe('recordEffect', () => {
  it('records once; missing row refused', async () => {
    expect(await journal.recordEffect(ref, 'present', { status: 'booked' })).toBe(true);
    expect(await journal.recordEffect(ref, 'absent', {})).toBe(false);
    expect((await journal.getDelegation(ref))!).toMatchObject({ effect: 'present', evidence: { status: 'booked' } });
    expect(await refusal(journal.recordEffect({ ...ref, delegationId: 'none' }, 'absent', {}))).toBe('DELEGATION_MISSING');
  });
});

describe('releaseHold', () => {
  it('releases a held intent once; missing row refused', async () => {
    await journal.createIntent(ref.workflowId, { ...intent(ref.workflowId, 'car.1'), held: '1' });
    const held = { workflowId: ref.workflowId, delegationId: 'car.1' };
    expect((await journal.getDelegation(held))!.held).toBe(true);
    expect(await journal.releaseHold(held)).toBe(true);
    expect(await journal.releaseHold(held)).toBe(false);
    expect((await journal.getDelegation(held))!.held).toBe(false);
    expect(await refusal(journal.releaseHold({ ...ref, delegationId: 'none' }))).toBe('DELEGATION_MISSING');
  });

  it('compare-and-set on the workflow version the decision was made from: a cancel written since releases nothing', async () => {
    await journal.createIntent(ref.workflowId, { ...intent(ref.workflowId, 'car.1'), held: '1' });
    const held = { workflowId: ref.workflowId, delegationId: 'car.1' };
    const decidedAt = Number(await redis().hget(journal.keys.workflow(ref.workflowId), 'version'));
    await journal.updateWorkflow(ref.workflowId, { cancelRequested: true });
    expect(await refusal(journal.releaseHold(held, decidedAt))).toBe('VERSION_CONFLICT');
    expect((await journal.getDelegation(held))!.held).toBe(true);
    expect(await journal.releaseHold(held, decidedAt + 1)).toBe(true);
  });
});

describe('takeToken (fleet-wide smooth rate limit)', () => {
  it('reserves evenly spaced slots: the first goes now, each next one window/max later', async () => {
    const waits: number[] = [];
    for (let index = 0; index < 5; index++) waits.push(await journal.takeToken('test', 2, 1_000));
    expect(waits[0]).toBe(0);
    for (let index = 1; index < 5; index++) {
      expect(waits[index]).toBeGreaterThanOrEqual(index * 500 - 50);
      expect(waits[index]).toBeLessThanOrEqual(index * 500);
    }
  });
});

describe('countRound (countRound-1.lua)', () => {
  it('counts the rounds of an act within a window that starts at the first round and is never extended', async () => {
    expect(await journal.countRound(ref, 'auth', 60_000)).toBe(1);
    const key = journal.keys.once(ref.workflowId, ref.delegationId, 'rounds:auth');
    const firstTtl = await redis().pttl(key);
    expect(firstTtl).toBeGreaterThan(0);
    expect(firstTtl).toBeLessThanOrEqual(60_000);
    expect(await journal.countRound(ref, 'auth', 600_000)).toBe(2);
    expect(await redis().pttl(key)).toBeLessThanOrEqual(60_000);
    expect(await journal.countRound(ref, 'other', 60_000)).toBe(1);
    await redis().del(key);
    expect(await journal.countRound(ref, 'auth', 60_000)).toBe(1);
  });
});
