/**
 * Attack round 29 on questions with a life cycle (INPUT_REQUIRED / AUTH_REQUIRED kept for a person, answered by the
 * API or a link): two people answering at once, an agent that asks again under the key it asked before, an answer
 * with hostile content, an agent that answers our reply with a foreign task. Real redis-server, real fleet, scripted
 * raw JSON-RPC agents. Passing `it`: the product holds; `it.fails`: a finding, named by its kind.
 */
import { describe, expect, it } from 'vitest';
import { NoOpenQuestionError } from '@durable-a2a/producer';
import { eventually } from '../harness/fleet.ts';
import { agentMessage, task, taskEvent, type ScriptedHandler, type ScriptedRequest } from '../harness/scripted-agent.ts';
import { recordOf, useFieldCases, workflowSettled } from '../harness/field-cases.ts';

const h = useFieldCases();

/** Our messages that carry `taskId` (answers to a question), in arrival order. */
const answersTo = (requests: readonly ScriptedRequest[], taskId = 'T1') =>
  requests.filter((request) => request.method === 'SendMessage' && request.params.message?.taskId === taskId).map((request) => request.params.message);
const textOf = (message: { parts: { text?: string }[] }) => message.parts.map((part) => part.text ?? '').join('');

/** The open questions of workflow `id` (the API's view). */
const openQuestions = async (setup: { producer: { get(id: string): Promise<{ openQuestions: unknown[] }> } }, id: string) => (await setup.producer.get(id)).openQuestions;

/**
 * An agent whose first SendMessage asks `question` (status message id `questionId`, INPUT_REQUIRED), whose answers
 * go through `onAnswer` (default: COMPLETED), and whose GetTask / SubscribeToTask show `current()`.
 */
function asking(questionId: string, question: string, options: { onAnswer?: ScriptedHandler; current?: () => Record<string, unknown> } = {}) {
  return (at: (seconds: number) => string) => {
    let contextId = 'C1';
    const first = () => task('T1', 'INPUT_REQUIRED', { contextId, timestamp: at(0), message: agentMessage(question, { messageId: questionId, taskId: 'T1', contextId }) });
    const current = options.current ?? first;
    return {
      SendMessage: ((params, call) => {
        if (!params.message.taskId) {
          contextId = params.message.contextId ?? 'C1';
          return { result: { task: { ...first(), history: [params.message] } } };
        }
        return (options.onAnswer ?? (() => ({ result: { task: task('T1', 'COMPLETED', { contextId, timestamp: at(10), artifacts: { a1: 'done' } }) } })))(params, call);
      }) satisfies ScriptedHandler,
      GetTask: () => ({ result: current() }),
      SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'hang' as const }),
    };
  };
}

describe('attack 29: two people answer one question at once', () => {
  it('ten different answers at once: exactly one is journaled and sent to the agent; the nine others are told NO_OPEN_QUESTION', async () => {
    const setup = await h.setUpAndDelegate(() => asking('q-1', 'Which city?')(h.at));
    await eventually(async () => (await openQuestions(setup, setup.id)).length === 1, 'question open');
    const answers = Array.from({ length: 10 }, (_, index) => `city-${index}`);
    const outcomes = await Promise.allSettled(answers.map((answer) => setup.producer.reply(setup.id, answer)));
    const accepted = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    expect(accepted).toHaveLength(1);
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(NoOpenQuestionError);
    const view = await workflowSettled(setup.producer, setup.id, 20_000);
    expect(view.state).toBe('COMPLETED');
    const sent = answersTo(setup.agent.requests);
    expect(sent).toHaveLength(1);
    expect(answers).toContain(textOf(sent[0]));
    expect(sent[0].messageId).toBe((accepted[0] as PromiseFulfilledResult<{ messageId: string }>).value.messageId);
  }, 60_000);
});

describe('attack 29: an agent asks again under the key of the question we answered', () => {
  // Kind (fixed): a new question whose status message id is the one of a question our reply already answered (an agent
  // that reuses message ids) was journaled parked but never open: nobody could answer it, the workflow waited for ever
  // (applyStatus-5.lua now journals it as '<key>#re<n>').
  it('INPUT_REQUIRED (message q-same) → our answer → WORKING → INPUT_REQUIRED again with message q-same, later: the second question is open, its answer reaches the agent once', async () => {
    let asked = 1;
    const setup = await h.setUpAndDelegate(() =>
      asking('q-same', 'Which city?', {
        onAnswer: (params) => {
          if (textOf(params.message) === 'Lyon') {
            asked = 2;
            return { result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, timestamp: h.at(1) }) } };
          }
          return { result: { task: task('T1', 'COMPLETED', { contextId: params.message.contextId, timestamp: h.at(10), artifacts: { a1: `done: ${textOf(params.message)}` } }) } };
        },
        current: () =>
          asked === 1
            ? task('T1', 'INPUT_REQUIRED', { timestamp: h.at(0), message: agentMessage('Which city?', { messageId: 'q-same', taskId: 'T1' }) })
            : task('T1', 'INPUT_REQUIRED', { timestamp: h.at(2), message: agentMessage('Which date?', { messageId: 'q-same', taskId: 'T1' }) }),
      })(h.at),
    );
    await eventually(async () => (await openQuestions(setup, setup.id)).length === 1, 'first question open');
    await setup.producer.reply(setup.id, 'Lyon');
    await eventually(async () => (await recordOf(setup.producer, setup.id))?.replyState === 'sent', 'first answer delivered');
    // The agent asks its second question under the same message id; the fleet reads it (stream, GetTask).
    await eventually(async () => {
      const record = await recordOf(setup.producer, setup.id);
      return record?.state === 'INPUT_REQUIRED' && JSON.stringify(record.question).includes('Which date?');
    }, 'second question journaled', 20_000);
    const open = await eventually(async () => {
      const questions = (await openQuestions(setup, setup.id)) as { delegationId: string }[];
      return questions.length === 1 && questions;
    }, 'second question open', 10_000);
    expect(open).toHaveLength(1);
    await setup.producer.reply(setup.id, 'Tuesday');
    const view = await workflowSettled(setup.producer, setup.id, 20_000);
    expect(view.state).toBe('COMPLETED');
    expect(answersTo(setup.agent.requests).map(textOf)).toEqual(['Lyon', 'Tuesday']);
  }, 60_000);
});

describe('attack 29 follow-up: an agent\'s keys in the form of the keys we make', () => {
  // Kind (fixed): the keys the journal makes for a question asked again (`<key>#re<n>`) shared the agent's namespace:
  // `x`, then `x#re1`, then `x` again made `x#re1` for the third asking, the agent's own answered key, and an agent's
  // own `k#re1` asked again was read as `k` and dropped (question-key-namespace.test.ts). The workflow waited for ever.
  const questions = [
    { id: 'x', text: 'Which city?', answer: 'Lyon' },
    { id: 'x#re1', text: 'Which date?', answer: 'Tuesday' },
    { id: 'x', text: 'Which time?', answer: 'noon' },
    { id: 'x#re1', text: 'How many?', answer: 'two' },
  ];
  it('questions under `x`, `x#re1`, `x`, `x#re1` (each after our answer to the one before, with WORKING between): each is open in turn, each answer reaches the agent once', async () => {
    let stage = 0;
    const asked = (index: number) =>
      task('T1', 'INPUT_REQUIRED', { timestamp: h.at(2 * index), message: agentMessage(questions[index]!.text, { messageId: questions[index]!.id, taskId: 'T1' }) });
    const setup = await h.setUpAndDelegate(() =>
      asking(questions[0]!.id, questions[0]!.text, {
        onAnswer: (params) => {
          stage++;
          if (stage < questions.length) return { result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, timestamp: h.at(2 * stage - 1) }) } };
          return { result: { task: task('T1', 'COMPLETED', { contextId: params.message.contextId, timestamp: h.at(20), artifacts: { a1: 'done' } }) } };
        },
        current: () => (stage < questions.length ? asked(stage) : task('T1', 'COMPLETED', { timestamp: h.at(20), artifacts: { a1: 'done' } })),
      })(h.at),
    );
    for (const [index, question] of questions.entries()) {
      await eventually(async () => {
        const open = (await openQuestions(setup, setup.id)) as { text?: string }[];
        return open.length === 1 && JSON.stringify(open[0]).includes(question.text);
      }, `question ${index} open`, 20_000);
      await setup.producer.reply(setup.id, question.answer);
    }
    const view = await workflowSettled(setup.producer, setup.id, 20_000);
    expect(view.state).toBe('COMPLETED');
    expect(answersTo(setup.agent.requests).map(textOf)).toEqual(questions.map((question) => question.answer));
  }, 90_000);
});

describe('attack 29: answers with hostile content', () => {
  // Kind (fixed): a metadata object read through the wire schemas (z.record) dropped an own `__proto__` key (and took its
  // value as the copy's prototype): the agent received other content than the person sent (JsonObjectSchema).
  it('an answer with control characters and prototype keys (`__proto__`, `constructor`) in data and metadata reaches the agent exactly as given, once', async () => {
    const setup = await h.setUpAndDelegate(() => asking('q-1', 'Which city?')(h.at));
    await eventually(async () => (await openQuestions(setup, setup.id)).length === 1, 'question open');
    // As a JSON body would give it: JSON.parse makes `__proto__` an own key.
    const wire = '[{"text":"Ly\\u0000on\\u001b[31m\\u2028\\ud800"},{"data":{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}},"ok":1},"metadata":{"__proto__":{"admin":true},"note":"n"}}]';
    const parts = JSON.parse(wire);
    await setup.producer.reply(setup.id, { parts });
    const view = await workflowSettled(setup.producer, setup.id, 20_000);
    expect(view.state).toBe('COMPLETED');
    const sent = answersTo(setup.agent.requests);
    expect(sent).toHaveLength(1);
    expect(JSON.stringify(sent[0].parts)).toBe(JSON.stringify(parts));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  }, 60_000);
});

describe('attack 29: the agent answers our reply with a foreign task', () => {
  it('our answer to T1 is answered with task T2 COMPLETED (another artifact): T2 is not taken for ours; the step ends on T1 as the agent has it', async () => {
    let answered = false;
    const setup = await h.setUpAndDelegate(() =>
      asking('q-1', 'Which city?', {
        onAnswer: () => {
          answered = true;
          return { result: { task: task('T2', 'COMPLETED', { contextId: 'C-other', timestamp: h.at(5), artifacts: { a1: 'foreign' } }) } };
        },
        current: () =>
          answered
            ? task('T1', 'COMPLETED', { timestamp: h.at(6), artifacts: { a1: 'mine' } })
            : task('T1', 'INPUT_REQUIRED', { timestamp: h.at(0), message: agentMessage('Which city?', { messageId: 'q-1', taskId: 'T1' }) }),
      })(h.at),
    );
    await eventually(async () => (await openQuestions(setup, setup.id)).length === 1, 'question open');
    await setup.producer.reply(setup.id, 'Lyon');
    const view = await workflowSettled(setup.producer, setup.id, 30_000);
    const record = (await recordOf(setup.producer, setup.id))!;
    expect(record.taskId).toBe('T1');
    expect(JSON.stringify(view)).not.toContain('foreign');
    expect(view.state).toBe('COMPLETED');
    expect(answersTo(setup.agent.requests)).toHaveLength(1);
  }, 60_000);
});
