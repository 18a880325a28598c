/**
 * A CancelTask the agent accepts while its task still waits for an answer (an agent that cancels asynchronously):
 * the attempt goes to a person (CANCEL_REFUSED) only after three reconcile rounds that found it still waiting, never
 * after three CancelTask answers that came close together (several cancel requests of a person, a late cancel, a
 * stop): those are one round. Before, every answer counted: a person pressing cancel three times sent a task the
 * agent was canceling to a person (NEEDS_ATTENTION CANCEL_LOST_RACE, only `abandon`, FAILED) instead of CANCELED.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { eventually } from '../harness/fleet.ts';
import { useFieldCases } from '../harness/field-cases.ts';
import { agentMessage, task, taskEvent, type ScriptedHandlers } from '../harness/scripted-agent.ts';
import { startWebhookReceiver } from '../harness/webhook-receiver.ts';
import { notificationEventId } from '@durable-a2a/shared';

const WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

const h = useFieldCases();

/** The workflow's view once it ended or waits for a person. */
const settled = <V extends { state: string }>(p: { get(id: string): Promise<V> }, id: string) =>
  eventually(async () => {
    const current = await p.get(id);
    return ['CANCELED', 'FAILED', 'NEEDS_ATTENTION', 'COMPLETED'].includes(current.state) && current;
  }, 'the workflow ends', 30_000);

/** T1 asks "how many?"; CancelTask is accepted and answered with the task as it is; it shows CANCELED once `done.value`. */
const slowToCancel = (done: { value: boolean }) => (seen: { contextId?: string }): ScriptedHandlers => {
  const current = () =>
    done.value
      ? task('T1', 'CANCELED', { contextId: seen.contextId, timestamp: h.at(2) })
      : task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), message: agentMessage('how many?', { taskId: 'T1', contextId: seen.contextId }) });
  return {
    SendMessage: (params) => {
      seen.contextId ??= params.message.contextId;
      return { result: { task: { ...current(), history: [params.message] } } };
    },
    GetTask: () => ({ result: current() }),
    SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' }),
    CancelTask: () => ({ result: current() }),
  };
};

describe('a cancel requested several times of an agent that cancels its waiting task asynchronously', () => {
  it('property: over 2..4 cancel requests in a row, the workflow ends CANCELED once the agent canceled, never sent to a person', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 4 }), async (requests) => {
        const done = { value: false };
        const { producer: p, agent, prefix } = await h.setUp(slowToCancel(done), { reconcileIntervalMs: 4_000 });
        const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `slow-cancel-${++n}` });
        await eventually(async () => (await p.questions(id)).length > 0, 'the question', 15_000);
        for (let request = 0; request < requests; request += 1) await p.cancel(id);
        const fleet = await h.fleetFor(prefix);
        await eventually(async () => agent.count('CancelTask') >= requests, 'every request\'s CancelTask answered', 15_000);
        await eventually(async () => {
          const counts = await fleet.context.queues.send.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
          return Object.values(counts).every((count) => count === 0) && agent.openRequests() === 0;
        }, 'the cancel jobs done', 15_000);
        // The agent's cancel completes now: the next reconcile round finds the task CANCELED.
        done.value = true;
        const view = await settled(p, id);
        expect(view.state).toBe('CANCELED');
        expect(view.steps[0]!.attempts[0]!.state).toBe('CANCELED');
        await h.closeFleetsAndProducers();
      }),
      { numRuns: 3 },
    );
  });
});

/**
 * T1 asks "how many?"; our answer is taken into its history while the task still shows the question (the agent works
 * on answers asynchronously); CancelTask is refused while it works; it completes ("booked") once `done.value`. With
 * `answerBack`, the SendMessage that carried the answer is answered only once it resolves (the reply stays 'sending').
 */
const answeredThenBusy = (done: { value: boolean }, answerBack?: Promise<void>) => (seen: { contextId?: string; answered?: boolean; history?: unknown[] }): ScriptedHandlers => {
  const current = () =>
    done.value && seen.answered
      ? task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: h.at(2), artifacts: { a1: 'booked' } })
      : task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), message: agentMessage('how many?', { messageId: 'q-how-many', taskId: 'T1', contextId: seen.contextId }), ...(seen.history ? { history: seen.history } : {}) });
  return {
    SendMessage: async (params) => {
      seen.contextId ??= params.message.contextId;
      seen.history = [...(seen.history ?? []), params.message];
      if (params.message.taskId === 'T1') {
        seen.answered = true;
        await answerBack;
      }
      return { result: { task: current() } };
    },
    GetTask: () => ({ result: current() }),
    SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' }),
    CancelTask: () => (done.value ? { result: current() } : { error: { code: -32002, message: 'Task cannot be canceled: working on your answer' } }),
  };
};

describe('a cancel refused while the agent works on the answer it already has', () => {
  it('the attempt is followed to its end and its result kept (COMPLETED, a person decides CANCEL_LOST_RACE with it), never AMBIGUOUS CANCEL_REFUSED', async () => {
    const done = { value: false };
    const { producer: p, agent } = await h.setUp(answeredThenBusy(done), { reconcileIntervalMs: 300 });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'answered-then-cancel' });
    await eventually(async () => (await p.questions(id)).length > 0, 'the question', 15_000);
    await p.reply(id, 'six people');
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => (await p.journal.getDelegation(ref))?.replyState === 'sent', 'the answer delivered', 15_000);
    await p.cancel(id);
    await eventually(async () => agent.count('CancelTask') >= 1 && agent.count('GetTask') >= 1, 'the refused cancel read the task', 15_000);
    await eventually(async () => {
      const row = await p.journal.getDelegation(ref);
      return (row?.state === 'AMBIGUOUS' || agent.count('CancelTask') >= 2) && agent.openRequests() === 0;
    }, 'a second cancel round, or a person', 15_000);
    done.value = true;
    const view = await settled(p, id);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED' });
    expect(view).toMatchObject({ state: 'NEEDS_ATTENTION', attention: { code: 'CANCEL_LOST_RACE', delegationId: 'main.1' } });
  });
});

/**
 * A fleet (reconcile every 300 ms, `requestTimeoutMs`) for an agent scripted by `handlers` whose task T1 asks a
 * question: one delegation (idempotency key `key`) answered "six people", once the answer's SendMessage reached the
 * agent and the reply is journaled 'sending'. The producer, the agent, the workflow id and the row's ref.
 */
async function answerSending(handlers: Parameters<typeof h.setUp>[0], requestTimeoutMs: number, key: string) {
  const { producer: p, agent } = await h.setUp(handlers, { reconcileIntervalMs: 300, requestTimeoutMs });
  const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: key });
  await eventually(async () => (await p.questions(id)).length > 0, 'the question', 15_000);
  await p.reply(id, 'six people');
  const ref = { workflowId: id, delegationId: 'main.1' };
  await eventually(async () => agent.calls('SendMessage').some((call) => call.params.message.taskId === 'T1') && (await p.journal.getDelegation(ref))?.replyState === 'sending', 'the answer with the agent, journaled sending', 15_000);
  return { p, agent, id, ref };
}

describe('a cancel refused while our answer is still being sent (the reply \'sending\', its send with the agent)', () => {
  it('the attempt is followed to its end and its result kept (COMPLETED, CANCEL_LOST_RACE with it), never AMBIGUOUS CANCEL_REFUSED', async () => {
    const done = { value: false };
    let openAnswer = () => {};
    const answerBack = new Promise<void>((resolve) => (openAnswer = resolve));
    // The held SendMessage of the answer must not time out while the cancel runs (its lease: the request timeout + 1 s).
    try {
      const { p, agent, id, ref } = await answerSending(answeredThenBusy(done, answerBack), 20_000, 'answer-sending-then-cancel');
      await p.cancel(id);
      await eventually(async () => agent.count('CancelTask') >= 1 && agent.count('GetTask') >= 1, 'the refused cancel read the task', 15_000);
      await eventually(async () => {
        const row = await p.journal.getDelegation(ref);
        return (row?.state === 'AMBIGUOUS' || agent.count('CancelTask') >= 2) && agent.openRequests('CancelTask') === 0 && agent.openRequests('GetTask') === 0;
      }, 'a second cancel round, or a person', 15_000);
      expect((await p.journal.getDelegation(ref))?.state).toBe('INPUT_REQUIRED');
      openAnswer();
      await eventually(async () => (await p.journal.getDelegation(ref))?.replyState === 'sent', 'the answer journaled sent', 15_000);
      done.value = true;
      const view = await settled(p, id);
      expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED' });
      expect(view).toMatchObject({ state: 'NEEDS_ATTENTION', attention: { code: 'CANCEL_LOST_RACE', delegationId: 'main.1' } });
    } finally {
      openAnswer();
    }
  });
});

/**
 * Review14: T1 asks "how many?"; the SendMessage carrying our answer is answered HTTP 503 (retryable: the reply stays
 * 'sending', retried later); the workflow is canceled before that retry, which then holds the answer back for good
 * (a stopping workflow's step reply never leaves). CancelTask is refused every time; the task keeps asking.
 */
const replyLeftSending = (seen: { contextId?: string }): ScriptedHandlers => {
  const current = () => task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), message: agentMessage('how many?', { messageId: 'q-how-many', taskId: 'T1', contextId: seen.contextId }) });
  return {
    SendMessage: (params) => {
      seen.contextId ??= params.message.contextId;
      if (params.message.taskId === 'T1') return { http: { status: 503, body: 'busy' } };
      return { result: { task: current() } };
    },
    GetTask: () => ({ result: current() }),
    SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' }),
    CancelTask: () => ({ error: { code: -32002, message: 'Task cannot be canceled' } }),
  };
};

describe('a cancel refused while our reply is left \'sending\' for good (its send failed, the workflow stopped before the retry)', () => {
  it('once the send lease passed and the task shows no reply, the attempt goes to a person (AMBIGUOUS CANCEL_REFUSED), never CancelTask refused round after round for ever while the sender\'s worker lives (fails on fix14)', async () => {
    const { p, agent, id, ref } = await answerSending(replyLeftSending, 1_500, 'reply-left-sending');
    await p.cancel(id);
    // The send lease passes (the request timeout + 1 s); then a few more cancel rounds, or a person.
    const until = (await p.journal.getDelegation(ref))?.replySendUntil ?? 0;
    await eventually(async () => Date.now() > until || (await p.journal.getDelegation(ref))?.state === 'AMBIGUOUS', 'the send lease passed', 15_000);
    const roundsBefore = agent.count('CancelTask');
    await eventually(async () => {
      const row = await p.journal.getDelegation(ref);
      return (row?.state === 'AMBIGUOUS' || agent.count('CancelTask') >= roundsBefore + 5) && agent.openRequests() === 0;
    }, 'a person, or five more refused cancel rounds', 20_000);
    const row = await p.journal.getDelegation(ref);
    expect(row?.replyState).toBe('sending');
    expect(row).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'CANCEL_REFUSED' } });
  });
});

/**
 * Review14: the agent accepts CancelTask but its task, still waiting, asks a NEW question (q2) while the workflow is
 * stopping; on the next round it shows CANCELED. q2 is a step question of a stopping workflow: closed (isStepStopped),
 * its answer refused. Before, parking on it emitted `question.opened` with an answer link: a person asked to answer a
 * question the journal refuses.
 */
describe('a stopping workflow\'s step asking a new question', () => {
  it('no question.opened for it (the question is closed: isStepStopped); the first question\'s was sent, the workflow ends CANCELED (fails on fix14)', async () => {
    const receiver = await startWebhookReceiver(WEBHOOK_SECRET);
    try {
      const rounds = { value: 0 };
      const asking = (seen: { contextId?: string }) => (key: 'q1' | 'q2', at: number) => task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(at), message: agentMessage(key === 'q1' ? 'how many?' : 'which day?', { messageId: `m-${key}`, taskId: 'T1', contextId: seen.contextId }) });
      const { producer: p, agent, fleet } = await h.setUp(
        (seen) => {
          const current = () => (rounds.value === 0 ? asking(seen)('q1', 1) : rounds.value === 1 ? asking(seen)('q2', 2) : task('T1', 'CANCELED', { contextId: seen.contextId, timestamp: h.at(3) }));
          return {
            SendMessage: (params) => {
              seen.contextId ??= params.message.contextId;
              return { result: { task: current() } };
            },
            GetTask: () => ({ result: current() }),
            SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' }),
            CancelTask: () => {
              rounds.value = Math.min(2, rounds.value + 1);
              return { result: current() };
            },
          };
        },
        { reconcileIntervalMs: 300, notify: { secret: WEBHOOK_SECRET, retry: { attempts: 6, backoffMs: 100 } } },
      );
      const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'stopped-step-new-question', notify: { url: receiver.url } });
      const first = await eventually(async () => (await p.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))?.questionKey, 'the first question', 15_000);
      const openedIds = (questionKey: string) => notificationEventId({ kind: 'question.opened', workflowId: id, delegationId: 'main.1', occasion: questionKey });
      await eventually(async () => receiver.acceptedIds().has(openedIds(first)), 'question.opened of the first question', 15_000);
      await p.cancel(id);
      const view = await settled(p, id);
      expect(view.state).toBe('CANCELED');
      const finishedId = notificationEventId({ kind: 'workflow.finished', workflowId: id, occasion: 'CANCELED' });
      await eventually(async () => {
        const counts = await fleet.context.queues.notify.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
        return receiver.acceptedIds().has(finishedId) && Object.values(counts).every((count) => count === 0);
      }, 'workflow.finished delivered, the notify queue drained', 15_000);
      const opened = receiver.received.filter((request) => request.answer === 'accept' && (JSON.parse(request.body) as { type?: string }).type === 'question.opened');
      expect(new Set(opened.map((request) => request.id))).toEqual(new Set([openedIds(first)]));
      expect(agent.count('CancelTask')).toBeGreaterThanOrEqual(2);
    } finally {
      await receiver.close();
    }
  });
});
