/**
 * A step's question closes when its workflow is stopping (a person's cancel, or another step failed for good): the
 * answer would have the agent do the very work the CancelTask is on its way to stop. Whatever the channel (the
 * producer's reply, a signed answer link) and whenever the answer was given (after the stop, or journaled before it
 * and not yet sent), the agent never receives it; a compensation's question stays open (compensations run after a
 * cancel). End to end with a scripted raw JSON-RPC agent that counts every call, and a property over the journal
 * scripts that take answers.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { Journal, listOpenQuestions } from '@durable-a2a/shared';
import { eventually } from '../harness/fleet.ts';
import { useFieldCases } from '../harness/field-cases.ts';
import { useRedisClient } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';
import { agentMessage, task, taskEvent, type ScriptedHandlers } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const redis = useRedisClient<Redis>(h.redisServer);
const NOT_CANCELABLE = { error: { code: -32002, message: 'Task cannot be canceled' } };
/** An answer we cannot read: a proxy's HTML page with status 200. */
const UNREADABLE = { http: { status: 200, body: '<html>gateway</html>', headers: { 'content-type': 'text/html' } } };

/**
 * An agent whose SendMessage opens T1 INPUT_REQUIRED ("how many?"); an answer on T1 completes it (the booking: the
 * work a cancel must stop); CancelTask is refused as not cancelable (the task keeps waiting for its answer).
 */
const askingIn = (questionState: 'INPUT_REQUIRED' | 'AUTH_REQUIRED', cancel: 'refuse' | 'accept-and-keep-waiting' | 'unreadable' = 'refuse') => (seen: { contextId?: string }): ScriptedHandlers => {
  let answered = false;
  const current = () =>
    answered
      ? task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: h.at(2), artifacts: { a1: 'booked' } })
      : task('T1', questionState, { contextId: seen.contextId, timestamp: h.at(1), message: agentMessage('how many?', { taskId: 'T1', contextId: seen.contextId }) });
  return {
    SendMessage: (params) => {
      if (params.message.parts?.[0]?.text === 'undo') return { result: { task: task('U1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message] }) } };
      seen.contextId ??= params.message.contextId;
      if (params.message.taskId === 'T1') answered = true;
      return { result: { task: { ...current(), history: [params.message] } } };
    },
    GetTask: () => ({ result: current() }),
    SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' }),
    CancelTask: () => (cancel === 'refuse' ? NOT_CANCELABLE : cancel === 'unreadable' ? UNREADABLE : { result: current() }),
  };
};
const asking = askingIn('INPUT_REQUIRED');
/** The answers the agent received: SendMessage calls on T1. */
const answersAt = (agent: { calls(method: string): { params: any }[] }) => agent.calls('SendMessage').filter((call) => call.params.message.taskId === 'T1').length;

describe('an answer to a step of a canceled workflow never reaches the agent', () => {
  it('answered after the cancel: refused NO_OPEN_QUESTION, the question no longer listed, no answer at the agent', async () => {
    const { producer: p, agent } = await h.setUp(asking);
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'answer-after-cancel' });
    await eventually(async () => (await p.questions(id)).length > 0, 'the question', 15_000);
    // Listed while open (so the empty listing after the cancel says something).
    await eventually(async () => (await listOpenQuestions(p.journal, { limit: 50 })).items.some((question) => question.workflowId === id), 'the question listed', 15_000);
    await p.cancel(id);
    await expect(p.reply(id, 'six people')).rejects.toMatchObject({ code: 'NO_OPEN_QUESTION' });
    expect((await p.get(id)).openQuestions).toEqual([]);
    expect((await listOpenQuestions(p.journal, { limit: 50 })).items).toEqual([]);
    await eventually(async () => agent.count('CancelTask') >= 1, 'CancelTask sent', 10_000);
    // The cancel's own work (CancelTask, its read, the decision) is done before the count is read.
    await eventually(async () => agent.count('GetTask') >= 1 || agent.count('SubscribeToTask') >= 2, 'the cancel read the task', 10_000);
    expect(answersAt(agent)).toBe(0);
    // The agent refused the cancel while its task waits: the attempt ends AMBIGUOUS CANCEL_REFUSED (a person decides).
    const attempt = await eventually(async () => {
      const current = (await p.get(id)).steps[0]!.attempts[0]!;
      return current.state === 'AMBIGUOUS' && current;
    }, 'the attempt ambiguous', 20_000);
    expect(attempt).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'CANCEL_REFUSED' } });
    expect(answersAt(agent)).toBe(0);
  });

  it('answered before the cancel, not yet sent (no worker running): the workers hold it back', async () => {
    const { producer: p, agent, prefix } = await h.setUp(asking);
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'answer-before-cancel' });
    await eventually(async () => (await p.questions(id)).length > 0, 'the question', 15_000);
    await h.closeFleetsAndProducers();
    const p2 = h.producer(prefix);
    const reply = await p2.reply(id, 'six people');
    expect(reply.created).toBe(true);
    await p2.cancel(id);
    const fleet = await h.fleetFor(prefix);
    await eventually(async () => agent.count('CancelTask') >= 1, 'CancelTask sent', 15_000);
    // The reply's send job and the cancel's have both run (the send queue holds no job).
    await eventually(async () => {
      const counts = await fleet.context.queues.send.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
      return Object.values(counts).every((count) => count === 0) && agent.openRequests() === 0;
    }, 'the send queue done', 15_000);
    expect(answersAt(agent)).toBe(0);
    // The task still waits (the agent refused the cancel): the attempt ends AMBIGUOUS CANCEL_REFUSED, a person decides.
    const attempt = await eventually(async () => {
      const current = await p2.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
      return current?.state === 'AMBIGUOUS' && current;
    }, 'the attempt ambiguous', 20_000);
    expect(attempt).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'CANCEL_REFUSED' } });
    expect(answersAt(agent)).toBe(0);
  });
});

/** A workflow asking INPUT_REQUIRED of an agent answering CancelTask as `cancel`, canceled: its view once a person decides. */
async function canceledUntilPerson(cancel: 'accept-and-keep-waiting' | 'unreadable') {
  const { producer: p, agent } = await h.setUp(askingIn('INPUT_REQUIRED', cancel), { reconcileIntervalMs: 300 });
  const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `cancel-${cancel}` });
  await eventually(async () => (await p.questions(id)).length > 0, 'the question', 15_000);
  await p.cancel(id);
  const view = await eventually(async () => {
    const current = await p.get(id);
    return current.state === 'NEEDS_ATTENTION' && current;
  }, 'a person decides', 30_000);
  return { view, agent };
}

describe('a canceled workflow whose agent refuses CancelTask while its task waits for an answer', () => {
  for (const questionState of ['INPUT_REQUIRED', 'AUTH_REQUIRED'] as const) {
    it(`${questionState}, no compensation: a person decides (the attempt AMBIGUOUS CANCEL_REFUSED, the workflow NEEDS_ATTENTION), one CancelTask, nothing answered`, async () => {
      const { producer: p, agent } = await h.setUp(askingIn(questionState), { reconcileIntervalMs: 300 });
      const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `refused-${questionState}` });
      await eventually(async () => (await p.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))?.state === questionState, 'the question', 15_000);
      await p.cancel(id);
      const view = await eventually(async () => {
        const current = await p.get(id);
        return current.state === 'NEEDS_ATTENTION' && current;
      }, 'a person decides', 20_000);
      expect(view.attention).toMatchObject({ code: 'CANCEL_LOST_RACE', delegationId: 'main.1' });
      expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'CANCEL_REFUSED' } });
      expect(agent.count('CancelTask')).toBe(1);
      expect(answersAt(agent)).toBe(0);
      // A person abandons it: FAILED, nothing sent.
      await p.resolve(id, 'abandon');
      await eventually(async () => (await p.get(id)).state === 'FAILED', 'abandoned', 15_000);
      expect(agent.count('CancelTask')).toBe(1);
    });
  }

  it('an unreadable CancelTask answer (an HTML page): not canceled all the same, a person decides (AMBIGUOUS CANCEL_REFUSED), its reason says the answer could not be read, never that the agent refused', async () => {
    const { view, agent } = await canceledUntilPerson('unreadable');
    const attempt = view.steps[0]!.attempts[0]!;
    expect(attempt).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'CANCEL_REFUSED' } });
    expect(attempt.error!.message).toContain('with an answer we could not read');
    expect(attempt.error!.message).not.toContain('refused CancelTask');
    expect(answersAt(agent)).toBe(0);
  });

  it('an agent that answers CancelTask but leaves its task waiting: a person decides after 3 rounds (CANCEL_REFUSED), never CancelTask for ever', async () => {
    const { view, agent } = await canceledUntilPerson('accept-and-keep-waiting');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'CANCEL_REFUSED' } });
    expect(agent.count('CancelTask')).toBe(3);
    expect(answersAt(agent)).toBe(0);
  });

  it('with a compensation: what the task may have done is undone once, then COMPENSATED', async () => {
    const { producer: p, agent } = await h.setUp(asking, { reconcileIntervalMs: 300 });
    const { id } = await p.startWorkflow({ workflowId: 'refused-undo', steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'book' }, compensation: { agent: agent.cardUrl, message: { text: 'undo' } } }] });
    await eventually(async () => (await p.questions(id)).length > 0, 'the question', 15_000);
    await p.cancel(id);
    const view = await eventually(async () => {
      const current = await p.get(id);
      return ['COMPENSATED', 'NEEDS_ATTENTION', 'FAILED', 'CANCELED'].includes(current.state) && current;
    }, 'settled', 20_000);
    expect(view.state).toBe('COMPENSATED');
    expect(agent.calls('SendMessage').filter((call) => call.params.message.parts?.[0]?.text === 'undo')).toHaveLength(1);
    expect(agent.count('CancelTask')).toBe(1);
    expect(answersAt(agent)).toBe(0);
  });
});

describe('a workflow stopping because another step failed for good', () => {
  it('the parked step\'s question closes, its refused cancel goes to a person, the workflow ends FAILED (never RUNNING for ever), no answer sent', async () => {
    const { producer: p, agent } = await h.setUp(asking, { reconcileIntervalMs: 300 });
    const rejecting = await h.agentWith({ SendMessage: (params) => ({ result: { task: task('R1', 'REJECTED', { contextId: params.message.contextId, history: [params.message] }) } }) });
    const { id } = await p.startWorkflow({
      workflowId: 'stopping-parked',
      maxAttemptsPerStep: 1,
      steps: [
        { name: 'ask', after: [], agent: agent.cardUrl, message: { text: 'book' } },
        { name: 'car', after: [], agent: rejecting.cardUrl, message: { text: 'rent' } },
      ],
    });
    const view = await eventually(async () => {
      const current = await p.get(id);
      return ['COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED', 'NEEDS_ATTENTION'].includes(current.state) && current;
    }, 'the workflow ends', 20_000);
    expect(view.state).toBe('FAILED');
    expect(view.steps.find((step) => step.name === 'ask')!.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'CANCEL_REFUSED' } });
    await expect(p.reply(id, 'six', 'ask')).rejects.toMatchObject({ code: 'NO_OPEN_QUESTION' });
    expect(answersAt(agent)).toBe(0);
    expect(agent.count('CancelTask')).toBe(1);
  });
});

describe('property: the journal takes an answer unless the step is stopping', () => {
  it('over the stop (none, cancel, another step failed, both), the kind (step, compensation) and the channel (reply, link)', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.constantFrom(undefined, '', '[]', '["car"]'),
        fc.constantFrom('step', 'compensation'),
        fc.constantFrom('reply', 'link'),
        async (cancelRequested, stopping, kind, channel) => {
          const prefix = `stop-prop-${++n}`;
          const journal = new Journal(redis(), { prefix, retentionMs: 60_000 });
          const ref = { workflowId: `wf-${n}`, delegationId: 'main.1' };
          await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId));
          // The row parked on question q1 (set directly: the fleet's path there is covered above).
          await redis().hset(journal.keys.delegation(ref.workflowId, ref.delegationId), { state: 'INPUT_REQUIRED', questionKey: 'q1', taskId: 'T1', kind });
          const flags: Record<string, string> = {};
          if (cancelRequested) flags.cancelRequested = '1';
          if (stopping !== undefined) flags.stopping = stopping;
          if (Object.keys(flags).length > 0) await redis().hset(journal.keys.workflow(ref.workflowId), flags);
          const answer = { parts: [{ text: 'six' }] };
          const taking = channel === 'reply' ? journal.recordReply(ref, `r-${n}`, answer) : journal.answerByLink(ref, { questionKey: 'q1', linkId: 'l1' }, `r-${n}`, answer);
          const outcome = await taking.then(
            (recorded) => (recorded.created ? 'taken' : 'other'),
            (error: { code?: string }) => error.code,
          );
          const stopped = cancelRequested || stopping === '["car"]';
          expect(outcome).toBe(stopped && kind === 'step' ? 'WRONG_STATE' : 'taken');
        },
      ),
      { numRuns: 40 },
    );
  });
});
