/**
 * A follow-up's messageId is its answer's identity at the A2A front door (handler.ts `answer`, caller.ts
 * `frontReplyId` → `Producer.reply`'s `messageId`): a client that sends its follow-up again (a retry after a lost
 * response) gets the answer it gave, whether the agent asked its next question since or not, and the agent gets each
 * answer once. Real redis-server, real HTTP, a real fleet and a demo agent asking `questions:<k>` questions in turn.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { completionSteps, type AgentRequest, type Step } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { TEST_API_TOKEN, authorized, listenOnLoopback, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const PREFIX = 'follow-up-retry';
let app: ApiServer;
let baseUrl: string;
let fleet: Fleet;
let agent: DemoAgentHandle;

/** Follow-ups each agent task got so far: the agent asks `Question <n>?` until it has `k` answers (`questions:<k>`). */
const answersOf = new Map<string, { questions: number; answers: number }>();
function asksInTurn(request: AgentRequest): Step[] {
  if (!request.isFollowUp) {
    answersOf.set(request.taskId, { questions: Number(/questions:(\d+)/.exec(request.text)?.[1] ?? 1), answers: 0 });
    return [{ state: 'INPUT_REQUIRED', text: 'Question 1?' }];
  }
  const turn = answersOf.get(request.taskId)!;
  turn.answers += 1;
  return turn.answers < turn.questions ? [{ state: 'INPUT_REQUIRED', text: `Question ${turn.answers + 1}?` }] : completionSteps(`answered ${turn.answers}`);
}

beforeAll(async () => {
  agent = await startDemoAgent({ name: 'Asking in turn', skills: [{ id: 'ask-in-turn', name: 'ask-in-turn', description: 'asks questions in turn', tags: ['test'] }], behaviour: asksInTurn });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, apiTokens: [TEST_API_TOKEN] });
  baseUrl = await listenOnLoopback(app);
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
  expect((await authorized(app, { method: 'POST', url: '/v1/agents', payload: { cardUrl: agent.cardUrl } })).statusCode).toBeLessThan(300);
}, 60_000);
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await agent?.close();
});

type Envelope = { result?: any; error?: { code: number; message: string } };
async function rpc(method: string, params: unknown): Promise<Envelope> {
  const response = await fetch(`${baseUrl}/a2a`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_API_TOKEN}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await response.json()) as Envelope;
}
const message = (messageId: string, text: string, taskId?: string) => ({ messageId, role: 'ROLE_USER', parts: [{ text }], ...(taskId ? { taskId } : {}) });
const statusText = async (taskId: string) => JSON.stringify((await rpc('GetTask', { id: taskId })).result?.status ?? {});
/** The follow-ups the agent got on the task it made for `request` (the first message's text). */
const followUpsOf = (request: string) => {
  const agentTaskId = agent.receivedMessages.find((received) => !received.isFollowUp && received.text === request)?.taskId;
  return agent.receivedMessages.filter((received) => received.isFollowUp && received.taskId === agentTaskId);
};

/** A retry of a follow-up already sent: this question's answer or the first one's, right away or once the agent moved on. */
interface Retry {
  of: 'this' | 'first';
  when: 'now' | 'after-next-question';
}
/** One question's turn: its answer (a fresh text, or the previous answer's text under a new messageId) and the retries after it. */
interface Turn {
  text: 'fresh' | 'previous';
  retries: Retry[];
}

const retryArbitrary: fc.Arbitrary<Retry> = fc.record({ of: fc.constantFrom('this' as const, 'first' as const), when: fc.constantFrom('now' as const, 'after-next-question' as const) });
const turnArbitrary: fc.Arbitrary<Turn> = fc.record({ text: fc.constantFrom('fresh' as const, 'previous' as const), retries: fc.array(retryArbitrary, { maxLength: 2 }) });

let run = 0;

describe('a follow-up sent again is the answer it was, never the answer to a later question', () => {
  it('property: over retries × question moves, each caller messageId answers at most one question and the agent gets each answer once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(turnArbitrary, { minLength: 1, maxLength: 3 }), async (turns) => {
        run += 1;
        const request = `run ${run} questions:${turns.length}`;
        const created = await rpc('SendMessage', { message: message(`run-${run}`, request), metadata: { skill: 'ask-in-turn' }, configuration: { returnImmediately: true } });
        const taskId = created.result.task.id as string;
        const sent: { messageId: string; text: string }[] = [];
        for (const [index, turn] of turns.entries()) {
          const question = index + 1;
          await eventually(async () => (await statusText(taskId)).includes(`Question ${question}?`), `question ${question}`);
          const text = turn.text === 'previous' && sent.length > 0 ? sent[sent.length - 1]!.text : `run ${run} answer ${question}`;
          const answer = { messageId: `run-${run}-answer-${question}`, text };
          sent.push(answer);
          const answered = await rpc('SendMessage', { message: message(answer.messageId, answer.text, taskId), configuration: { returnImmediately: true } });
          expect(answered.error, `answer ${question}`).toBeUndefined();
          for (const retry of turn.retries) {
            const moved = question < turns.length ? `Question ${question + 1}?` : 'TASK_STATE_COMPLETED';
            if (retry.when === 'after-next-question') await eventually(async () => (await statusText(taskId)).includes(moved), `after question ${question}`);
            const again = retry.of === 'this' ? answer : sent[0]!;
            const retried = await rpc('SendMessage', { message: message(again.messageId, again.text, taskId), configuration: { returnImmediately: true } });
            expect(retried.error, `retry of ${again.messageId}`).toBeUndefined();
            expect(retried.result.task.id).toBe(taskId);
          }
        }
        await eventually(async () => (await statusText(taskId)).includes('TASK_STATE_COMPLETED'), 'completed');
        const followUps = followUpsOf(request);
        // The agent got each answer once, in order: no retry became the answer to a later question.
        expect(followUps.map((received) => received.text)).toEqual(sent.map((answer) => answer.text));
        expect(new Set(followUps.map((received) => received.messageId)).size).toBe(sent.length);
        // Each caller messageId answered one question: one answer per messageId in the workflow's history.
        const view = await authorized(app, { method: 'GET', url: `/v1/workflows/${taskId}` });
        const answers = (view.json().history as { kind: string; messageId?: string }[]).filter((entry) => entry.kind === 'answer');
        expect(answers).toHaveLength(sent.length);
        expect(new Set(answers.map((entry) => entry.messageId)).size).toBe(sent.length);
      }),
      {
        numRuns: 8,
        examples: [
          // The round-29 finding: the first answer sent again once the agent asked its second question.
          [[{ text: 'fresh', retries: [{ of: 'this', when: 'after-next-question' }] }, { text: 'fresh', retries: [] }]],
          // Sent again at once (the agent may not have asked again yet), and the first answer after the task completed.
          [[{ text: 'fresh', retries: [{ of: 'this', when: 'now' }] }, { text: 'previous', retries: [{ of: 'first', when: 'after-next-question' }] }]],
          // The same content under a new messageId is a new answer; the first answer sent again at the third question.
          [[{ text: 'fresh', retries: [] }, { text: 'previous', retries: [{ of: 'first', when: 'now' }] }, { text: 'fresh', retries: [{ of: 'first', when: 'now' }, { of: 'this', when: 'after-next-question' }] }]],
        ],
      },
    );
  }, 240_000);

  it('case: the first follow-up sent again once 20 big answers pushed it out of the workflow history is still that answer: the agent gets it once', async () => {
    run += 1;
    const questions = 21;
    const request = `run ${run} questions:${questions}`;
    const created = await rpc('SendMessage', { message: message(`run-${run}`, request), metadata: { skill: 'ask-in-turn' }, configuration: { returnImmediately: true } });
    const taskId = created.result.task.id as string;
    // Answers near the history's 8 KiB entry bound: 20 of them pass its 128 KiB, so the first answer's entry is dropped.
    const sent = Array.from({ length: questions }, (_, index) => ({ messageId: `run-${run}-answer-${index + 1}`, text: `answer ${index + 1}: ${'two rooms, '.repeat(index === 0 ? 1 : 700)}` }));
    for (const [index, answer] of sent.slice(0, questions - 1).entries()) {
      await eventually(async () => (await statusText(taskId)).includes(`Question ${index + 1}?`), `question ${index + 1}`);
      expect((await rpc('SendMessage', { message: message(answer.messageId, answer.text, taskId), configuration: { returnImmediately: true } })).error).toBeUndefined();
    }
    await eventually(async () => (await statusText(taskId)).includes(`Question ${questions}?`), `question ${questions}`);
    const history = (await authorized(app, { method: 'GET', url: `/v1/workflows/${taskId}` })).json().history as { kind: string; text?: string }[];
    expect(history.some((entry) => entry.kind === 'answer' && entry.text?.startsWith('answer 1:'))).toBe(false);
    // The first follow-up again: the answer it was, not the answer to question 21; other content under it is refused.
    const retried = await rpc('SendMessage', { message: message(sent[0]!.messageId, sent[0]!.text, taskId), configuration: { returnImmediately: true } });
    expect(retried.error).toBeUndefined();
    expect((await rpc('SendMessage', { message: message(sent[0]!.messageId, 'Lyon', taskId), configuration: { returnImmediately: true } })).error?.message).toMatch(/other parts/);
    expect(await statusText(taskId)).toContain(`Question ${questions}?`);
    const last = sent[questions - 1]!;
    expect((await rpc('SendMessage', { message: message(last.messageId, last.text, taskId), configuration: { returnImmediately: true } })).error).toBeUndefined();
    await eventually(async () => (await statusText(taskId)).includes('TASK_STATE_COMPLETED'), 'completed');
    expect(followUpsOf(request).map((received) => received.text)).toEqual(sent.map((answer) => answer.text));
  }, 180_000);

  it('the same messageId with other content is refused, and the agent never gets it', async () => {
    run += 1;
    const request = `run ${run} questions:2`;
    const created = await rpc('SendMessage', { message: message(`run-${run}`, request), metadata: { skill: 'ask-in-turn' }, configuration: { returnImmediately: true } });
    const taskId = created.result.task.id as string;
    await eventually(async () => (await statusText(taskId)).includes('Question 1?'), 'question 1');
    expect((await rpc('SendMessage', { message: message(`run-${run}-answer`, 'Paris', taskId), configuration: { returnImmediately: true } })).error).toBeUndefined();
    await eventually(async () => (await statusText(taskId)).includes('Question 2?'), 'question 2');
    const conflicting = await rpc('SendMessage', { message: message(`run-${run}-answer`, 'Lyon', taskId), configuration: { returnImmediately: true } });
    expect(conflicting.error?.message).toMatch(/other parts/);
    expect(await statusText(taskId)).toContain('Question 2?');
    expect((await rpc('SendMessage', { message: message(`run-${run}-answer-2`, 'Friday', taskId), configuration: { returnImmediately: true } })).error).toBeUndefined();
    await eventually(async () => (await statusText(taskId)).includes('TASK_STATE_COMPLETED'), 'completed');
    expect(followUpsOf(request).map((received) => received.text)).toEqual(['Paris', 'Friday']);
  }, 60_000);
});
