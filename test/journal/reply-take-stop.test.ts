/**
 * Review13: the take of a reply's 'sending' lease (markReply-1.lua) refuses when the step's workflow is stopping,
 * atomically with the workflow's flags (stepStopped.lua): a cancel landing between the reply worker's read of the
 * workflow and its take never lets the reply leave. A compensation's reply still goes. Real redis-server.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Journal, isStepStopped, isWorkflowStopping, listOpenQuestions, searchWorkflows } from '@durable-a2a/shared';
import { workflowView } from '@durable-a2a/producer';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let counter = 0;

type Stop = 'none' | 'cancel' | 'step-failed';

/** A parked delegation of `kind` with a journaled reply, then the workflow's stop, then the take: what the take says. */
async function takeAfterStop(kind: 'step' | 'compensation', stop: Stop, via: 'take' | 'mark') {
  const journal = new Journal(redis(), { prefix: `rts${++counter}`, retentionMs: 60_000 });
  const ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
  await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, { ...intentRow(ref.workflowId), kind });
  await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusTimestamp: '2026-01-01T10:00:01Z' });
  expect(await journal.recordReply(ref, 'r1', { parts: [{ text: 'yes' }] })).toEqual({ messageId: 'r1', created: true });
  if (stop === 'cancel') await journal.updateWorkflow(ref.workflowId, { cancelRequested: true });
  if (stop === 'step-failed') await journal.updateWorkflow(ref.workflowId, { stopping: ['step car failed for good'] });
  const fence = await journal.claim(ref, 'w');
  const outcome = via === 'take' ? await journal.takeReplySend(ref, fence, 'r1', 'token-1', 30_000) : await journal.markReply(ref, fence, 'r1', 'sending', '', { token: 'token-1', leaseMs: 30_000 });
  return { outcome, replyState: (await journal.getDelegation(ref))!.replyState };
}

describe('review13: a reply journaled before its workflow stopped is never taken for sending', () => {
  it('a step: reply journaled, then a cancel, then the take: refused (workflow-stopping), the reply stays pending', async () => {
    expect(await takeAfterStop('step', 'cancel', 'take')).toEqual({ outcome: 'workflow-stopping', replyState: 'pending' });
  });

  it('a compensation: reply journaled, then a cancel, then the take: taken', async () => {
    expect(await takeAfterStop('compensation', 'cancel', 'take')).toEqual({ outcome: 'taken', replyState: 'sending' });
  });

  it('property: the take succeeds exactly when the row is a compensation or its workflow is not stopping', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('step' as const, 'compensation' as const), fc.constantFrom<Stop>('none', 'cancel', 'step-failed'), fc.constantFrom('take' as const, 'mark' as const), async (kind, stop, via) => {
        const goes = kind === 'compensation' || stop === 'none';
        const { outcome, replyState } = await takeAfterStop(kind, stop, via);
        expect(outcome, JSON.stringify({ kind, stop, via })).toBe(via === 'take' ? (goes ? 'taken' : 'workflow-stopping') : goes);
        expect(replyState).toBe(goes ? 'sending' : 'pending');
      }),
      { numRuns: 24 },
    );
  });

  it('property: isWorkflowStopping (the TypeScript reading) agrees with stepStopped.lua (the take) over stored flags', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('', '1', '0'), fc.constantFrom(undefined, '', '[]', '["step car failed for good"]'), async (cancelRequested, stopping) => {
        const journal = new Journal(redis(), { prefix: `rts${++counter}`, retentionMs: 60_000 });
        const ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
        await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId));
        await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusTimestamp: '2026-01-01T10:00:01Z' });
        await journal.recordReply(ref, 'r1', { parts: [{ text: 'yes' }] });
        // The flags written as stored (raw HSET), as any writer may have left them.
        await redis().hset(journal.keys.workflow(ref.workflowId), { cancelRequested, ...(stopping === undefined ? {} : { stopping }) });
        const taken = await journal.takeReplySend(ref, await journal.claim(ref, 'w'), 'r1', 'token-1', 30_000);
        const expected = isWorkflowStopping({ cancelRequested, stopping }) ? 'workflow-stopping' : 'taken';
        expect(taken, JSON.stringify({ cancelRequested, stopping })).toBe(expected);
        // The record's reading of the same flags (as parseWorkflowHash gives them) agrees too.
        const record = { cancelRequested: cancelRequested === '1', stopping: stopping ? (JSON.parse(stopping) as string[]) : undefined };
        expect(isWorkflowStopping(record)).toBe(expected === 'workflow-stopping');
      }),
      { numRuns: 24 },
    );
  });

  it('property: GET /v1/questions (listOpenQuestions) lists a parked question exactly when it is a compensation\'s or its workflow is not stopping', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('step' as const, 'compensation' as const), fc.constantFrom<Stop>('none', 'cancel', 'step-failed'), async (kind, stop) => {
        const journal = new Journal(redis(), { prefix: `rts${++counter}`, retentionMs: 60_000 });
        const ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
        await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, { ...intentRow(ref.workflowId), kind });
        await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusTimestamp: '2026-01-01T10:00:01Z' });
        expect((await listOpenQuestions(journal, { limit: 50 })).items.map((question) => question.workflowId)).toEqual([ref.workflowId]);
        if (stop === 'cancel') await journal.updateWorkflow(ref.workflowId, { cancelRequested: true });
        if (stop === 'step-failed') await journal.updateWorkflow(ref.workflowId, { stopping: ['step car failed for good'] });
        const listed = (await listOpenQuestions(journal, { limit: 50 })).items.map((question) => question.workflowId);
        expect(listed, JSON.stringify({ kind, stop })).toEqual(kind === 'compensation' || stop === 'none' ? [ref.workflowId] : []);
      }),
      { numRuns: 12 },
    );
  });
});

describe('every listing of open questions leaves a stopping workflow\'s step questions out (isStepStopped)', () => {
  /** A RUNNING workflow whose delegation of `kind` asks (`state`), then its stop: what each listing shows of it. */
  async function listingsAfterStop(kind: 'step' | 'compensation', stop: Stop, state: 'INPUT_REQUIRED' | 'AUTH_REQUIRED') {
    const journal = new Journal(redis(), { prefix: `rts${++counter}`, retentionMs: 60_000 });
    const ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
    const definition = JSON.stringify({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: 'https://agent.example/.well-known/agent-card.json', message: { text: 'x' } }] });
    await journal.createWorkflow(ref.workflowId, { state: 'RUNNING', definition, createdAt: '1000' }, { ...intentRow(ref.workflowId), kind });
    await journal.applyStatus(ref, { mode: 'event', state, taskId: 'T1', statusTimestamp: '2026-01-01T10:00:01Z' });
    if (stop === 'cancel') await journal.updateWorkflow(ref.workflowId, { cancelRequested: true });
    if (stop === 'step-failed') await journal.updateWorkflow(ref.workflowId, { stopping: ['step car failed for good'] });
    const questions = (await listOpenQuestions(journal, { limit: 50 })).items.length;
    const [summary] = (await searchWorkflows(journal, {}, { limit: 50 })).items;
    const byState = (await searchWorkflows(journal, { state }, { limit: 50 })).items.length;
    const waiting = (await searchWorkflows(journal, { waiting: true }, { limit: 50 })).items.length;
    // Review14: the workflow view too, its open questions and the attempt's progress ('waiting for a person' only while open).
    const view = await workflowView(journal, ref.workflowId);
    const attempt = view!.steps.flatMap((step) => [...step.attempts, ...step.compensations]).find((each) => each.delegationId === ref.delegationId);
    const viewed = { openQuestions: view!.openQuestions.length, waitingForPerson: attempt?.progress === 'waiting for a person' ? 1 : 0 };
    return { questions, search: { openQuestions: summary?.openQuestions, waitingFor: summary?.waitingFor }, byState, waiting, viewed };
  }

  it('a step asks, then its workflow is canceled: the search shows no open question, nothing waiting, no match by INPUT_REQUIRED (as GET /v1/questions)', async () => {
    expect(await listingsAfterStop('step', 'cancel', 'INPUT_REQUIRED')).toEqual({ questions: 0, search: { openQuestions: 0, waitingFor: undefined }, byState: 0, waiting: 0, viewed: { openQuestions: 0, waitingForPerson: 0 } });
  });

  // One run per kind and stop (every pair reached whatever the seed); the question's kind drawn.
  const pairs = (['step', 'compensation'] as const).flatMap((kind) => (['none', 'cancel', 'step-failed'] as const).map((stop) => ({ kind, stop })));
  it.each(pairs)('property ($kind, stop $stop): the search and GET /v1/questions list the question exactly when the stored flags and kind leave it open (isStepStopped, stepStopped.lua)', async ({ kind, stop }) => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('INPUT_REQUIRED' as const, 'AUTH_REQUIRED' as const), async (state) => {
        const open = kind === 'compensation' || stop === 'none' ? 1 : 0;
        expect(isStepStopped(kind, { cancelRequested: stop === 'cancel' ? '1' : null, stopping: stop === 'step-failed' ? '["x"]' : null })).toBe(open === 0);
        expect(await listingsAfterStop(kind, stop, state)).toEqual({ questions: open, search: { openQuestions: open, waitingFor: open ? state : undefined }, byState: open, waiting: open, viewed: { openQuestions: open, waitingForPerson: open } });
      }),
      { numRuns: 4 },
    );
  });
});
