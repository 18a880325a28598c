/**
 * Field cases end to end — Contexts and replies: a different or empty contextId, and a reply the agent refuses (R16).
 * Producer → fleet → a scripted raw JSON-RPC agent → journal; each `describe` names its case id
 * (docs/field-cases.md says what each proves); the case's "Expected" is the assertion.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../harness/fleet.ts';
import {
  finished,
  metric,
  recordOf,
  useFieldCases,
  workflowSettled,
} from '../harness/field-cases.ts';
import {
  AU,
  SU,
  agentMessage,
  ev,
  task,
} from '../harness/scripted-agent.ts';

const h = useFieldCases();

describe('R16: agent returns a different or empty contextId', () => {
  it('srv-77 is authoritative for T9 (C1 kept as requested), "" and "other" do not fail the job, the reply goes to T9 + srv-77', async () => {
    const { producer: p, agent, fleet, seen } = await h.setUp(
      () => ({
        SendMessage: (params, call) => {
          if (call.count === 1) {
            seen.contextId = params.message.contextId;
            seen.messageId = params.message.messageId;
            return { result: { task: task('T9', 'SUBMITTED', { contextId: 'srv-77', history: [{ ...params.message, contextId: 'srv-77' }], timestamp: h.at(0) }) } };
          }
          return { result: { task: task('T9', 'WORKING', { contextId: 'srv-77', timestamp: h.at(10) }) } };
        },
        SubscribeToTask: (_params, call) =>
          call.count === 1
            ? {
                sse: [
                  ev(SU('WORKING', { taskId: 'T9', contextId: '', timestamp: h.at(1) })),
                  ev(SU('WORKING', { taskId: 'T9', contextId: 'other', timestamp: h.at(2) })),
                  ev(AU('a1', false, false, 'partial', { taskId: 'T9', contextId: '' })),
                  ev(SU('INPUT_REQUIRED', { taskId: 'T9', contextId: '', timestamp: h.at(3), message: agentMessage('one room or two?', { taskId: 'T9' }) })),
                ],
                endAfter: 'close',
              }
            : { sse: [ev(SU('COMPLETED', { taskId: 'T9', contextId: 'other', timestamp: h.at(11) }))], endAfter: 'close' },
        GetTask: () => ({ result: task('T9', 'INPUT_REQUIRED', { contextId: 'srv-77', timestamp: h.at(3), message: agentMessage('one room or two?') }) }),
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r16', idempotencyKey: 'r16' });
    const [question] = await eventually(async () => {
      const open = await p.questions(id);
      return open.length > 0 && open;
    }, 'open question');
    expect(question!.text).toBe('one room or two?');
    const parked = (await recordOf(p, id))!;
    expect(parked.state).toBe('INPUT_REQUIRED');
    expect(parked.contextId).toBe('srv-77');
    expect(parked.requestedContextId).toBe(seen.contextId);
    await p.reply(id, 'two');
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    expect(record.contextId).toBe('srv-77');
    expect(record.requestedContextId).toBe(seen.contextId);
    expect(record.taskId).toBe('T9');
    expect(agent.count('SendMessage')).toBe(2);
    const reply = agent.calls('SendMessage')[1]!.params.message;
    expect(reply.taskId).toBe('T9');
    expect(reply.contextId).toBe('srv-77');
    expect(await metric(fleet.metrics.transitions, { state: 'TASK_STATE_FAILED' })).toBe(0);
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
  });
});

describe('a reply the agent refuses for good', () => {
  it('opens the question again with the reason; a second answer goes out on the same task', async () => {
    const question = agentMessage('how many rooms?', { taskId: 'T4' }); // the same status message in the stream and in GetTask
    const { producer: p, agent } = await h.setUp(
      () => ({
        SendMessage: (params, call) => {
          if (call.count === 1) return { result: { task: task('T4', 'SUBMITTED', { contextId: 'C4', history: [params.message], timestamp: h.at(0) }) } };
          if (call.count === 2) return { error: { code: -32602, message: 'answer must be a number of rooms' } };
          return { result: { task: task('T4', 'WORKING', { contextId: 'C4', timestamp: h.at(10) }) } };
        },
        SubscribeToTask: (_params, call) =>
          call.count === 1
            ? { sse: [ev(SU('INPUT_REQUIRED', { taskId: 'T4', contextId: 'C4', timestamp: h.at(3), message: question }))], endAfter: 'close' }
            : { sse: [ev(SU('COMPLETED', { taskId: 'T4', contextId: 'C4', timestamp: h.at(11) }))], endAfter: 'close' },
        GetTask: () => ({ result: task('T4', 'INPUT_REQUIRED', { contextId: 'C4', timestamp: h.at(3), message: question }) }),
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'rooms', idempotencyKey: 'refused-reply' });
    await eventually(async () => (await p.questions(id)).length > 0, 'the question');
    const first = await p.reply(id, 'a few');
    const [reopened] = await eventually(async () => {
      const open = await p.questions(id);
      return open.length > 0 && open[0]!.previousReplyRefused !== undefined ? open : undefined;
    }, 'the question open again after the refusal');
    expect(reopened!.previousReplyRefused).toContain('answer must be a number of rooms');
    const second = await p.reply(id, 'two');
    expect(second.created).toBe(true);
    expect(second.messageId).not.toBe(first.messageId);
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    const replies = agent.calls('SendMessage').slice(1).map((call) => call.params.message);
    expect(replies.map((message) => [message.taskId, message.parts[0].text])).toEqual([
      ['T4', 'a few'],
      ['T4', 'two'],
    ]);
  });
});
