/**
 * A direct Message answer on every path that can receive one (attack 23, a fact in a Message answer not read): what
 * it proves is decided once (`core/observation.ts` messageAnswerProof). The SendMessage answer's cases are in
 * test/send/attacks-23.test.ts; here the send stream's first event, an echo of our own message, the plain reply
 * (kept), the answer to our reply to a question, and a final Message naming a task the agent keeps no task for (an
 * @a2a-js/sdk executor copying its request context's task id into its reply). Real redis-server, real fleet, scripted
 * raw JSON-RPC agents and a real SDK agent.
 */
import { describe, expect, it } from 'vitest';
import { artifactText, finished, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { agentMessage, ev, task, taskEvent, userMessage } from '../harness/scripted-agent.ts';
import { startDemoAgent } from '../harness/agent.ts';
import { NOT_FOUND } from '../harness/field-cases.ts';

const h = useFieldCases();
const start = h.setUpAndDelegate;

/** `ev` of a `{message}` StreamResponse. */
const messageEvent = (message: Record<string, unknown>) => ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { message } }));

const noTasks = () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } });

describe('a send stream whose first event is a Message', () => {
  it('naming task T9 in our context: T9 bound and followed, COMPLETED with its artifact, never from the message', async () => {
    let message: any;
    const t9 = (state: string) => task('T9', state, { contextId: message.contextId, history: [message], ...(state === 'COMPLETED' ? { artifacts: { a1: 'booked' } } : {}) });
    const { producer: p, agent, id } = await start(
      () => ({
        SendStreamingMessage: (params) => ((message = params.message), { sse: [messageEvent(agentMessage('working on it in T9', { taskId: 'T9', contextId: params.message.contextId }))] }),
        GetTask: () => ({ result: t9('COMPLETED') }),
        SubscribeToTask: () => ({ sse: [taskEvent(t9('COMPLETED'))] }),
      }),
      { streamingSends: true, reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } },
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T9' });
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
  }, 45_000);

  it('in another context, naming another task: never COMPLETED from it, the foreign context not journaled, one send', async () => {
    const { producer: p, agent, id } = await start(
      () => ({
        SendStreamingMessage: () => ({ sse: [messageEvent(agentMessage('your booking is cancelled', { taskId: 'T-OTHER', contextId: 'ctx-of-someone-else' }))] }),
        ListTasks: noTasks,
      }),
      { streamingSends: true, reconcileIntervalMs: 300 },
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
    expect(record.state).not.toBe('COMPLETED');
    expect(record.contextId).not.toBe('ctx-of-someone-else');
  }, 45_000);
});

describe('a SendMessage answered with a Message', () => {
  it('an echo of our own message (role user): not the agent\'s answer, never COMPLETED from it, one send', async () => {
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params) => ({ result: { message: { ...userMessage(params.message.messageId, 'book'), contextId: params.message.contextId } } }),
        ListTasks: noTasks,
      }),
      { reconcileIntervalMs: 300 },
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.state).not.toBe('COMPLETED');
  }, 45_000);

  it('control: a plain reply (role agent, our context, no task): COMPLETED with its parts, as before', async () => {
    const { producer: p, agent, id } = await start(() => ({ SendMessage: (params) => ({ result: { message: agentMessage('done, room 12', { contextId: params.message.contextId }) } }) }));
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.state).toBe('COMPLETED');
    expect(JSON.stringify(record.result)).toContain('done, room 12');
  }, 45_000);
});

describe('the answer to our reply to a question is a Message', () => {
  it('control: a Message in another context naming another task: our task is followed, COMPLETED with its own result', async () => {
    // Tried: the reply path reads only a Task from the answer (reply.ts settleDelivered); a Message is never a result there. Holds.
    let answered = false;
    const { producer: p, agent } = await h.setUp((seen) => {
      const current = () =>
        answered
          ? task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } })
          : task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, message: agentMessage('how many?', { messageId: 'q1', taskId: 'T1', contextId: seen.contextId }) });
      return {
        SendMessage: (params: any) => {
          seen.contextId ??= params.message.contextId;
          if (params.message.taskId !== 'T1') return { result: { task: { ...current(), history: [params.message] } } };
          answered = true;
          return { result: { message: agentMessage('your booking is cancelled', { taskId: 'T-OTHER', contextId: 'ctx-of-someone-else' }) } };
        },
        GetTask: () => ({ result: current() }),
        SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' as const }),
      };
    }, { followBackoff: { baseMs: 200, capMs: 1_000 } });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'reply-answered-by-message' });
    await eventually(async () => (await p.questions(id)).length > 0, 'q1 shown', 15_000);
    await p.reply(id, 'six people');
    const record = await finished(p, id, 30_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(record.contextId).not.toBe('ctx-of-someone-else');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
    expect(JSON.stringify(record.result ?? null)).not.toContain('cancelled');
  }, 60_000);
});

describe('a final Message naming a task the agent keeps no task for', () => {
  /**
   * An @a2a-js/sdk (or a2a-python) executor that builds its reply from its request context (`taskId:
   * requestContext.taskId`) and publishes only that Message: the SDK stores no task, so GetTask and SubscribeToTask on
   * the id answer TaskNotFound (-32001). The Message was the agent's whole answer: COMPLETED with it, never LOST.
   */
  it('a real SDK agent (only a Message, taskId = requestContext.taskId): COMPLETED with its text, one SendMessage', async () => {
    const agent = await startDemoAgent({ behaviour: () => [{ directMessage: 'done, room 12', withTaskId: true }] });
    try {
      const prefix = h.newPrefix();
      const p = h.producer(prefix);
      await h.fleetFor(prefix, { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } });
      const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `${prefix}-sdk` });
      const record = await finished(p, id, 30_000);
      expect(agent.sendMessageCount()).toBe(1);
      expect(record.state).toBe('COMPLETED');
      expect(JSON.stringify(record.result)).toContain('done, room 12');
      // The id it named was asked about, and the agent said it has no such task.
      expect(agent.requestCount('GetTask') + agent.requestCount('SubscribeToTask')).toBeGreaterThan(0);
    } finally {
      await agent.stop();
    }
  }, 45_000);

  it('a raw agent answering TaskNotFound to GetTask and SubscribeToTask: COMPLETED with the Message, one SendMessage', async () => {
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params) => ({ result: { message: agentMessage('done, room 12', { taskId: 'T9', contextId: params.message.contextId }) } }),
        GetTask: () => NOT_FOUND,
        SubscribeToTask: () => NOT_FOUND,
        ListTasks: noTasks,
      }),
      { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } },
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T9' });
    expect(JSON.stringify(record.result)).toContain('done, room 12');
    expect(agent.count('GetTask') + agent.count('SubscribeToTask')).toBeGreaterThan(0);
  }, 45_000);

  it('the same on a send stream (its one event the Message naming T9): COMPLETED with it, one send', async () => {
    const { producer: p, agent, id } = await start(
      () => ({
        SendStreamingMessage: (params) => ({ sse: [messageEvent(agentMessage('done, room 12', { taskId: 'T9', contextId: params.message.contextId }))] }),
        GetTask: () => NOT_FOUND,
        SubscribeToTask: () => NOT_FOUND,
        ListTasks: noTasks,
      }),
      { streamingSends: true, reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } },
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T9' });
    expect(JSON.stringify(record.result)).toContain('done, room 12');
  }, 45_000);

  it('control: T9 read WORKING first, then denied: never COMPLETED from the interim Message (the not-found window decides)', async () => {
    let reads = 0;
    let message: any;
    const working = () => task('T9', 'WORKING', { contextId: message.contextId, history: [message] });
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params) => ((message = params.message), { result: { message: agentMessage('working on it in T9', { taskId: 'T9', contextId: params.message.contextId }) } }),
        // The first read of T9 (whichever call) shows it; every later one denies it.
        GetTask: () => (++reads === 1 ? { result: working() } : NOT_FOUND),
        SubscribeToTask: () => (++reads === 1 ? { sse: [taskEvent(working())], endAfter: 'close' as const } : NOT_FOUND),
        ListTasks: noTasks,
      }),
      { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } },
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(reads).toBeGreaterThan(1);
    expect(JSON.stringify(record.result ?? null)).not.toContain('working on it');
    expect(record.state).not.toBe('COMPLETED');
  }, 45_000);
});
