/**
 * Attack13: a JSON-RPC error answer to SendMessage that also names a task (in `result` beside the error, in
 * `error.data`, as a sibling `task`), on HTTP 200 or in a 401. The agent took our message and made its task: the
 * answer is no refusal (effect maybe), so the step is never FAILED and re-delegated, nor resent with the same
 * messageId (P34's rule for a bare 401); the search finds our message and adopts the task. Before: HTTP 200 with
 * `error` -32602 and a task beside it was InvalidParams (a refusal: FAILED, re-delegated, the work done twice); a 401
 * whose JSON-RPC envelope carried the task as a sibling was resent. Real redis-server, real fleet, scripted raw
 * JSON-RPC agents (exact bytes).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useFieldCases, workflowSettled } from '../harness/field-cases.ts';
import { task, taskEvent, type ScriptedAnswer } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** Where the task goes in the error answer. */
const PLACES = ['result', 'error.data', 'sibling'] as const;
type Place = (typeof PLACES)[number];

/** The error answer naming `created` at `place`: HTTP `status`, a JSON-RPC error `code` with our request id. */
function errorAnswer(status: number, code: number, place: Place, created: object, id: unknown): ScriptedAnswer {
  const error = { code, message: 'refused', ...(place === 'error.data' ? { data: { task: created } } : {}) };
  const body = { jsonrpc: '2.0', id, error, ...(place === 'result' ? { result: { task: created } } : place === 'sibling' ? { task: created } : {}) };
  return { http: { status, body: JSON.stringify(body) } };
}

/**
 * A workflow (two attempts allowed) at one agent that takes the message, makes task T1 (our message in its history),
 * answers the error naming it, and lists and reads T1 COMPLETED with a1 "booked". Returns the settled view and the
 * number of SendMessage calls.
 */
async function run(status: number, code: number, place: Place) {
  const prefix = h.newPrefix();
  let messageId = '';
  let contextId = '';
  const history = () => [{ messageId, role: 'ROLE_USER', parts: [{ text: 'book' }] }];
  const finishedTask = () => task('T1', 'COMPLETED', { contextId, history: history(), artifacts: { a1: 'booked' } });
  const agent = await h.agentWith({
    SendMessage: (params, call) => {
      messageId = params.message.messageId;
      contextId = params.message.contextId;
      return errorAnswer(status, code, place, task('T1', 'WORKING', { contextId, history: history() }), call.id);
    },
    ListTasks: () => ({ result: { tasks: messageId ? [finishedTask()] : [], nextPageToken: '', pageSize: 50, totalSize: messageId ? 1 : 0 } }),
    GetTask: () => ({ result: finishedTask() }),
    SubscribeToTask: () => ({ sse: [taskEvent(finishedTask())] }),
  });
  const producer = h.producer(prefix);
  await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
  const workflowId = `beside-${prefix}`;
  await producer.startWorkflow({ workflowId, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', agent: agent.cardUrl, message: { text: 'book' } }] });
  const view = await workflowSettled(producer, workflowId, 30_000);
  return { view, sends: agent.count('SendMessage') };
}

describe('attack13: a JSON-RPC error answer to SendMessage that names a task', () => {
  it('HTTP 200, error -32602 (invalid params: a refusal) with the task in "result" beside it: adopted by the search, one SendMessage, COMPLETED', async () => {
    const { view, sends } = await run(200, -32602, 'result');
    expect(sends).toBe(1);
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  }, 45_000);

  it('HTTP 401 whose JSON-RPC envelope carries the task as a sibling: never resent with the same messageId; adopted, one SendMessage', async () => {
    const { view, sends } = await run(401, -32600, 'sibling');
    expect(sends).toBe(1);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  }, 45_000);

  it('property: over HTTP 200/400/401/403, refusal codes and where the task sits: one SendMessage, one attempt, COMPLETED with T1', async () => {
    const statuses = [200, 400, 401, 403];
    // Refusals by the A2A error table (effect none): invalid request, method not found, invalid params, parse error,
    // version not supported, content type not supported.
    const codes = [-32600, -32601, -32602, -32700, -32009, -32005];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...statuses), fc.constantFrom(...codes), fc.constantFrom(...PLACES), async (status, code, place) => {
        const { view, sends } = await run(status, code, place);
        expect(sends, JSON.stringify({ status, code, place })).toBe(1);
        expect(view.steps[0]!.attempts, JSON.stringify({ status, code, place })).toHaveLength(1);
        expect(view.steps[0]!.attempts[0], JSON.stringify({ status, code, place })).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
      }),
      // Every status and every place, whatever the seed: the examples run first.
      { numRuns: 12, examples: statuses.flatMap((status, index) => PLACES.map((place) => [status, codes[index % codes.length]!, place] as [number, number, Place])) },
    );
  }, 600_000);
});
