/**
 * question35 (red team, kind: a question whose words are in the agent's message(s) of the task, not in its status
 * message). Input: on our task's stream the agent sends a Message event ("Which date would you like?", role agent,
 * taskId ours), then a status update INPUT_REQUIRED with no status message; GetTask's history holds the question too.
 * Observed on main: the row parks on the question but `producer.questions(id)` shows `text: ""` (the stream's Message
 * event dropped, packages/shared/src/journal/observe.ts). Expected: the person sees the agent's words. A36 still
 * holds: a WORKING progress message ("Generating response...") sent before a later status never becomes the question.
 * Real redis-server, real fleet, raw node:http JSON-RPC agent (exact bytes).
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../harness/fleet.ts';
import { recordOf, useFieldCases } from '../harness/field-cases.ts';
import { SU, agentMessage, ev, task, taskEvent, userMessage } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** A JSON-RPC stream frame carrying one Message event. */
const messageEvent = (message: unknown) => ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { message } }));

/** Waits until the delegation is parked, then for its one open question with non-empty text (bounded). */
async function askedText(p: Awaited<ReturnType<typeof h.setUp>>['producer'], id: string): Promise<string> {
  await eventually(async () => (await recordOf(p, id))?.state === 'INPUT_REQUIRED', 'parked', 20_000);
  let text = '';
  await eventually(async () => {
    const questions = await p.questions(id);
    text = questions[0]?.text ?? '';
    return questions.length === 1 && text !== '';
  }, 'the question shown with its words', 20_000).catch(() => undefined);
  return text;
}

describe('a question in the agent message before a bare INPUT_REQUIRED (question35)', () => {
  it('stream: Message "Which date would you like?" then INPUT_REQUIRED without a message: the person sees the question', async () => {
    const { producer: p, agent, prefix } = await h.setUp((seen) => {
      const question = () => agentMessage('Which date would you like?', { messageId: 'q-date', taskId: 'T1', contextId: seen.contextId });
      return {
        SubscribeToTask: (_params, call) => ({
          sse:
            call.count === 1
              ? [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), messageEvent(question()), ev(SU('INPUT_REQUIRED', { contextId: seen.contextId }))]
              : [taskEvent(task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, history: [userMessage(seen.messageId!), question()] }))],
          endAfter: 'hang',
        }),
        GetTask: () => ({ result: task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, history: [userMessage(seen.messageId!), question()] }) }),
      };
    });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book a room', idempotencyKey: `${prefix}-1` });
    expect(await askedText(p, id)).toBe('Which date would you like?');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('stream: the words taken from the Message stay when later reads show the bare INPUT_REQUIRED without history', async () => {
    const { producer: p, agent, prefix } = await h.setUp((seen) => ({
      SubscribeToTask: (_params, call) => ({
        sse:
          call.count === 1
            ? [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), messageEvent(agentMessage('Which date would you like?', { messageId: 'q-date', taskId: 'T1', contextId: seen.contextId })), ev(SU('INPUT_REQUIRED', { contextId: seen.contextId }))]
            : [taskEvent(task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId }))],
        endAfter: 'hang',
      }),
      GetTask: () => ({ result: task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId }) }),
    }), { reconcileIntervalMs: 300 });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book a room', idempotencyKey: `${prefix}-1` });
    expect(await askedText(p, id)).toBe('Which date would you like?');
    const reads = agent.count('GetTask') + agent.count('SubscribeToTask');
    await eventually(async () => agent.count('GetTask') + agent.count('SubscribeToTask') >= reads + 2, 'two more reads', 30_000);
    const questions = await p.questions(id);
    expect(questions.map((question) => question.text)).toEqual(['Which date would you like?']);
  }, 60_000);

  it('stream: INPUT_REQUIRED without a message (stamped), then the Message; a later GetTask whose history ends in it fills the question', async () => {
    const { producer: p, agent, prefix } = await h.setUp((seen) => ({
      SubscribeToTask: () => ({
        sse: [
          taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(0) })),
          ev(SU('INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1) })),
          messageEvent(agentMessage('Which date would you like?', { messageId: 'q-date', taskId: 'T1', contextId: seen.contextId })),
        ],
        endAfter: 'hang',
      }),
      GetTask: () => ({ result: task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), history: [userMessage(seen.messageId!), agentMessage('Which date would you like?', { messageId: 'q-date', taskId: 'T1' })] }) }),
    }), { reconcileIntervalMs: 300 });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book a room', idempotencyKey: `${prefix}-1` });
    expect(await askedText(p, id)).toBe('Which date would you like?');
    expect(await p.questions(id)).toHaveLength(1);
  }, 60_000);

  it('GetTask only (no stream): INPUT_REQUIRED without a message, history ending in the question: the person sees it', async () => {
    const { producer: p, agent, prefix } = await h.setUp((seen) => ({
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: () => ({ result: task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, history: [userMessage(seen.messageId!), agentMessage('Which date would you like?', { messageId: 'q-date', taskId: 'T1' })] }) }),
    }), { reconcileIntervalMs: 300 });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book a room', idempotencyKey: `${prefix}-1` });
    expect(await askedText(p, id)).toBe('Which date would you like?');
  }, 60_000);

  it('A36 kept: WORKING "Generating response..." then INPUT_REQUIRED without a message: the progress message is never the question', async () => {
    const { producer: p, agent, prefix } = await h.setUp((seen) => {
      const progress = () => agentMessage('Generating response...', { messageId: 'p1', taskId: 'T1', contextId: seen.contextId });
      return {
        SubscribeToTask: () => ({
          sse: [taskEvent(task('T1', 'SUBMITTED', { contextId: seen.contextId })), ev(SU('WORKING', { contextId: seen.contextId, message: progress() })), ev(SU('INPUT_REQUIRED', { contextId: seen.contextId }))],
          endAfter: 'hang',
        }),
        GetTask: () => ({ result: task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, history: [userMessage(seen.messageId!), progress()] }) }),
      };
    }, { reconcileIntervalMs: 300 });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book a room', idempotencyKey: `${prefix}-1` });
    await eventually(async () => (await recordOf(p, id))?.state === 'INPUT_REQUIRED', 'parked', 20_000);
    const reads = agent.count('GetTask') + agent.count('SubscribeToTask');
    await eventually(async () => agent.count('GetTask') + agent.count('SubscribeToTask') >= reads + 2, 'two more reads', 30_000);
    const questions = await p.questions(id);
    expect(questions).toHaveLength(1);
    expect(questions[0]!.text).not.toContain('Generating response');
  }, 60_000);
});
