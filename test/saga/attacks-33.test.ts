/**
 * Attack round 33: hostile or broken answers to SendMessage, GetTask, ListTasks and CancelTask on the three bindings
 * (JSON-RPC, HTTP+JSON, gRPC): error answers that belong to another request or carry a task beside the refusal,
 * answers mislabelled, cut short, redirected, with duplicate keys, near the body limit; reads that name another task
 * or go back in time; listings under another context or with tokens that never end. Real redis-server, real fleet,
 * raw node:http agents (exact bytes) and @a2a-js/sdk gRPC agents, counting SendMessage. Each `it` holds; the two
 * findings are marked FIXED FINDING (each verified failing on main).
 */
import { describe, expect, it } from 'vitest';
import { FAST_ATTACK_OPTIONS, artifactText, bookingThenAnswering, closedAfterEach, finished, listTasksPage, useFieldCases, viewOf, workflowSettled } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { startGrpcAgent, type GrpcAgentHandle } from '../harness/grpc-agent.ts';
import { task, taskEvent, type ScriptedHandlers } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const grpcAgents = closedAfterEach<GrpcAgentHandle>(h, (agent) => agent.stop());

/** Runs a one-step workflow over A (`handlers`) and B; asserts B never got a SendMessage and A's booking was the outcome (or a person). */
async function neverTheSecondAgent(handlers: ScriptedHandlers, fleetOptions: Record<string, unknown> = {}) {
  const a = await h.agentWith(handlers);
  const { b, view } = await h.stepOverTwo(a.cardUrl, { ...FAST_ATTACK_OPTIONS, ...fleetOptions }, 45_000);
  expect(b.count('SendMessage')).toBe(0);
  expect(a.count('SendMessage')).toBe(1);
  expect(view.steps[0]!.attempts).toHaveLength(1);
  return { a, view, attempt: view.steps[0]!.attempts[0]! };
}

/*
 * FIXED FINDING (kind: ownership before the code, for every JSON-RPC error answer). Input: a JSON-RPC agent books,
 * then answers SendMessage with HTTP 400 (or 500) and `{"jsonrpc":"2.0","id":"someone-else","error":{"code":-32602}}`:
 * another request's error. Observed: `hotel.1 FAILED INVALID_PARAMS`, `hotel.2 COMPLETED` at agent B: booked twice (the
 * same body on HTTP 200 was refused as RESPONSE_ID_MISMATCH and the search adopted T1). Expected: an error envelope
 * carrying another request's id refuses nothing of ours, on any status and to a plain or a streaming call. Fixed:
 * `foreignErrorAnswer` (packages/a2a/src/jsonrpc.ts) on the non-2xx path of `postJsonRpc` and on a whole error
 * answer to a stream (`followJsonRpcStream`), 1.0 and 0.3. Property: packages/a2a/test/foreign-error-envelope-property.test.ts.
 */
describe('attack 33: a JSON-RPC error under another request\'s id', () => {
  for (const status of [400, 500]) {
    it(`SendMessage booked, answered HTTP ${status} with -32602 under another id: never FAILED and sent to B; T1 adopted`, async () => {
      const { attempt } = await neverTheSecondAgent(bookingThenAnswering(() => ({ http: { status, body: JSON.stringify({ jsonrpc: '2.0', id: 'someone-else', error: { code: -32602, message: 'Invalid params' } }) } })));
      expect(attempt).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    }, 60_000);
  }

  it('GetTask(T1) answered HTTP 404 with -32001 under another id, for ever; ListTasks lists nothing: never LOST and re-delegated to B', async () => {
    const a = await h.agentWith({
      SendMessage: (params) => ({ result: { task: task('T1', 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } }),
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: () => ({ http: { status: 404, body: JSON.stringify({ jsonrpc: '2.0', id: 'someone-else', error: { code: -32001, message: 'Task not found' } }) } }),
      ListTasks: () => listTasksPage([]),
    });
    const { b, view } = await h.stepOverTwo(a.cardUrl, FAST_ATTACK_OPTIONS, 45_000);
    expect(b.count('SendMessage')).toBe(0);
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(view.steps[0]!.attempts[0]!.state).not.toBe('LOST');
    expect(a.count('SendMessage')).toBe(1);
  }, 60_000);

  it('control: the same -32602 under our own id (HTTP 400) is a refusal: FAILED, the step goes to B', async () => {
    const a = await h.agentWith({ SendMessage: (_params, call) => ({ http: { status: 400, body: JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32602, message: 'Invalid params' } }) } }) });
    const { b, view } = await h.stepOverTwo(a.cardUrl, FAST_ATTACK_OPTIONS, 45_000);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'FAILED', error: { code: 'INVALID_PARAMS' } });
    expect(b.count('SendMessage')).toBe(1);
  }, 60_000);
});

/*
 * FIXED FINDING (kind: a task beside an error is no refusal, attack13, on the gRPC binding). Input: two @a2a-js/sdk
 * gRPC agents whose SendMessage handler runs (the task is created: booked), then answer INVALID_ARGUMENT with the
 * ErrorInfo INVALID_PARAMS and a `lf.a2a.v1.Task` beside it in `grpc-status-details-bin`. Observed: `main.1 FAILED
 * INVALID_PARAMS`, `main.2 FAILED INVALID_PARAMS`: two SendMessage, two bookings. Expected: as on JSON-RPC and HTTP+JSON
 * (`namesTask`), effect maybe: the search adopts the task, one SendMessage. Fixed: `detailsNameTask`
 * (packages/a2a/src/grpc/status-table.ts). Property: packages/a2a/test/grpc-task-beside-status-property.test.ts.
 */
describe('attack 33: a gRPC refusal with a task beside it', () => {
  it('INVALID_ARGUMENT + ErrorInfo INVALID_PARAMS + a Task in the details, after the handler booked: one SendMessage, COMPLETED', async () => {
    const made: GrpcAgentHandle[] = [];
    for (let index = 0; index < 2; index++) {
      const agent = await startGrpcAgent();
      grpcAgents.push(agent);
      made.push(agent);
      agent.answerSendsWith({ code: 3, reason: 'INVALID_PARAMS', afterHandler: true, extraDetails: [{ '@type': 'type.googleapis.com/lf.a2a.v1.Task', id: 'T-beside', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } }] });
    }
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    for (const agent of made) await producer.registerAgent(agent.cardUrl);
    await h.fleetFor(prefix, { reconcileIntervalMs: 300, followBackoff: { baseMs: 50, capMs: 200 } });
    const workflowId = `beside-${prefix}`;
    await producer.startWorkflow({ workflowId, maxAttemptsPerStep: 2, steps: [{ name: 'main', skill: 'demo', message: { text: 'book' } }] });
    const view = await workflowSettled(producer, workflowId, 40_000);
    expect(made[0]!.requestCount('SendMessage') + made[1]!.requestCount('SendMessage')).toBe(1);
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(view.steps[0]!.attempts[0]!.state).toBe('COMPLETED');
  }, 60_000);
});

describe('attack 33: SendMessage answers mislabelled, cut, redirected, doubled', () => {
  it('HTTP 200 text/html whose body is our success envelope: never sent to B; T1 adopted', async () => {
    await neverTheSecondAgent(bookingThenAnswering((call, booked) => ({ http: { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { task: booked } }), headers: { 'content-type': 'text/html' } } })));
  }, 60_000);

  it('Content-Encoding: gzip over a plain JSON body: never sent to B', async () => {
    await neverTheSecondAgent(bookingThenAnswering((call, booked) => ({ http: { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { task: booked } }), headers: { 'content-encoding': 'gzip' } } })));
  }, 60_000);

  it('a chunked body that ends before its last chunk: never sent to B', async () => {
    await neverTheSecondAgent(bookingThenAnswering(() => ({ raw: 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n10\r\n{"jsonrpc":"2.0"\r\n' })));
  }, 60_000);

  for (const status of [303, 307]) {
    it(`HTTP ${status} to another agent's JSON-RPC URL: never followed (the other agent gets nothing), never sent to B`, async () => {
      const elsewhere = await h.agentWith({ SendMessage: (params) => ({ result: { task: task('TX', 'COMPLETED', { contextId: params.message.contextId, history: [params.message] }) } }) });
      await neverTheSecondAgent(bookingThenAnswering(() => ({ http: { status, body: '', headers: { location: elsewhere.rpcUrl } } })));
      expect(elsewhere.count('SendMessage')).toBe(0);
    }, 60_000);
  }

  it('duplicate keys: the task names "id" and "status" twice (T-other COMPLETED, then T1 WORKING): JSON\'s last member, T1, followed to its own COMPLETED', async () => {
    const { view, attempt } = await neverTheSecondAgent(bookingThenAnswering((call, booked) => {
      const inner = JSON.stringify({ contextId: booked.contextId, history: booked.history });
      const body = `{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":{"task":{"id":"T-other","status":{"state":"TASK_STATE_COMPLETED"},"id":"T1","status":{"state":"TASK_STATE_WORKING"},${inner.slice(1, -1)}}}}`;
      return { http: { status: 200, body } };
    }));
    expect(attempt).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(view.state).toBe('COMPLETED');
  }, 60_000);

  it('an "id": 1 (a number) where the task id is a string: an unreadable answer, never sent to B', async () => {
    await neverTheSecondAgent(bookingThenAnswering((call, booked) => ({ http: { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { task: { ...booked, id: 1 } } }) } })));
  }, 60_000);
});

describe('attack 33: answers near the body limit (responseBodyBytes 8 KiB)', () => {
  const limit = 8 * 1024;
  /** Our success envelope padded (task metadata) to exactly `bytes` bytes. */
  const envelopeOf = (id: unknown, booked: Record<string, unknown>, bytes: number) => {
    const bare = JSON.stringify({ jsonrpc: '2.0', id, result: { task: { ...booked, metadata: { pad: '' } } } });
    return JSON.stringify({ jsonrpc: '2.0', id, result: { task: { ...booked, metadata: { pad: 'x'.repeat(bytes - Buffer.byteLength(bare)) } } } });
  };
  for (const [name, delta] of [['one byte under', -1], ['at', 0], ['one byte over', 1]] as const) {
    it(`SendMessage answer ${name} the limit: ${delta > 0 ? 'AMBIGUOUS LIMIT_EXCEEDED, a person' : 'COMPLETED'}, never sent to B`, async () => {
      const { attempt } = await neverTheSecondAgent(bookingThenAnswering((call, booked) => ({ http: { status: 200, body: envelopeOf(call.id, booked, limit + delta) } })), { limits: { responseBodyBytes: limit } });
      if (delta > 0) expect(attempt).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED' } });
      else expect(attempt).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    }, 60_000);
  }
});

describe('attack 33: reads that name another task or go back', () => {
  it('GetTask(T1) answered with T2 COMPLETED "forged" whose history holds our messageId: never adopted; our message in two tasks is a person (AMBIGUOUS naming T2)', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: (_params, call) => (call.count < 3
        ? { result: task('T2', 'COMPLETED', { contextId: seen.contextId, history: [{ messageId: seen.messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }], artifacts: { a1: 'forged' } }) }
        : { result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
    }), FAST_ATTACK_OPTIONS);
    // Our messageId in two tasks: the work may have been done twice, a person decides (never T2 adopted, never "forged").
    const record = await finished(producer, id, 40_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', taskId: 'T1' });
    expect(record.error?.message).toContain('T2');
    expect(artifactText(await viewOf(producer, id), 'a1')).not.toBe('forged');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('GetTask: COMPLETED a1 "booked", then WORKING with no artifact: the finished row never regresses nor loses a1', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: (_params, call) => ({ result: task('T1', call.count === 1 ? 'COMPLETED' : 'WORKING', { contextId: seen.contextId, ...(call.count === 1 ? { artifacts: { a1: 'booked' } } : {}) }) }),
    }), FAST_ATTACK_OPTIONS);
    expect(await finished(producer, id, 40_000)).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('CancelTask(T1) answered T2 CANCELED in our context: never CANCELED from T2; T1\'s own CANCELED settles it; one SendMessage', async () => {
    let canceled = false;
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId }))], endAfter: 'hang' }),
      GetTask: () => ({ result: task('T1', canceled ? 'CANCELED' : 'WORKING', { contextId: seen.contextId }) }),
      CancelTask: () => ((canceled = true), { result: task('T2', 'CANCELED', { contextId: seen.contextId, artifacts: { a1: 'theirs' } }) }),
    }), FAST_ATTACK_OPTIONS);
    await eventually(async () => agent.count('SubscribeToTask') > 0, 'followed', 20_000);
    await producer.cancel(id);
    const record = await finished(producer, id, 40_000);
    expect(['CANCELED', 'AMBIGUOUS']).toContain(record.state);
    expect(record.taskId).toBe('T1');
    expect(artifactText(await viewOf(producer, id), 'a1')).toBeUndefined();
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);
});

describe('attack 33: listings (crash window 2: sent, not recorded)', () => {
  it('ListTasks lists a task holding our messageId under ANOTHER context: never resent (adopted by our messageId, or a person)', async () => {
    let messageId = '';
    const theirs = () => task('T1', 'COMPLETED', { contextId: 'not-the-one-we-sent', history: [{ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }], artifacts: { a1: 'booked' } });
    const agent = await h.agentWith({ ListTasks: () => listTasksPage([theirs()]), GetTask: () => ({ result: theirs() }) });
    const { producer, id } = await h.sentNotRecorded(agent, (ours) => void (messageId = ours), FAST_ATTACK_OPTIONS);
    const record = await finished(producer, id, 40_000);
    expect(['COMPLETED', 'AMBIGUOUS']).toContain(record.state);
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);

  it('ListTasks answers a page one byte over responseBodyBytes (8 KiB), for ever: never read as an empty page (never resent), a person', async () => {
    const padded = (id: unknown) => {
      const bare = JSON.stringify({ jsonrpc: '2.0', id, result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0, pad: '' } });
      return JSON.stringify({ jsonrpc: '2.0', id, result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0, pad: 'x'.repeat(8 * 1024 + 1 - Buffer.byteLength(bare)) } });
    };
    const agent = await h.agentWith({ ListTasks: (_params, call) => ({ http: { status: 200, body: padded(call.id) } }) });
    const { producer, id } = await h.sentNotRecorded(agent, undefined, { ...FAST_ATTACK_OPTIONS, limits: { responseBodyBytes: 8 * 1024 } });
    const record = await finished(producer, id, 40_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);

  it('ListTasks whose nextPageToken is the request\'s token plus whitespace, for ever, never listing a task: a person, bounded calls, never resent', async () => {
    const agent = await h.agentWith({ ListTasks: (params) => listTasksPage([], `${params.pageToken ?? 'p'} `) });
    const { producer, id } = await h.sentNotRecorded(agent, undefined, FAST_ATTACK_OPTIONS);
    const record = await finished(producer, id, 40_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(0);
    expect(agent.count('ListTasks')).toBeLessThan(500);
  }, 60_000);
});
