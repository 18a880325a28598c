/**
 * FINDING (readnotfound; kind: a read's "not found" without A2A proof read as "the agent lost the task").
 * Input: a running task (the agent holds our message, the work under way), and every read of it (GetTask,
 * SubscribeToTask, CancelTask) answered by a server on the way with a bare not-found: HTTP 404 whose body is no A2A
 * error (a `google.rpc.Status` without an ErrorInfo or with another API's reason, 404 put in a JSON-RPC `code`,
 * TASK_NOT_FOUND over a code of the implementation range), or gRPC NOT_FOUND without an ErrorInfo (a proxy's answer
 * for a route it does not know, an interceptor's). Observed (before): each counted toward the not-found window; where
 * ListTasks could not show the task (an A2A 0.3 agent has none; a listing that shows nothing) the attempt ended LOST and
 * the step was delegated again: a second SendMessage, the work done twice. Where ListTasks showed it, the check before
 * LOST found it again and, once it finished, the denied full read made it a person's (AMBIGUOUS), its result unread.
 * Expected: only the spec's TaskNotFoundError in the binding's own form (JSON-RPC -32001; the ErrorInfo reason
 * TASK_NOT_FOUND on HTTP+JSON and gRPC) counts; a bare not-found is an answer that proves nothing about the task
 * (`taskNotFoundProven`): the read is unusable, ListTasks reads the task where it can (COMPLETED with its result), else
 * bounded rounds and a person (AMBIGUOUS), never LOST, never a second SendMessage. Controls: the spec's TaskNotFoundError
 * (a real @a2a-js/sdk 1.3.0 agent that restarted and forgot its tasks, gRPC and HTTP+JSON; a raw agent's ErrorInfo)
 * still ends LOST after the window, and the step is delegated again as before.
 * Real redis-server, real fleet, raw node:http agents and real @a2a-js/sdk agents (1.3.0 and 0.3.14 over gRPC).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runsSlowly, type Behaviour } from '../harness/agent-behaviours.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { eventually } from '../harness/fleet.ts';
import { artifactText, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { startGrpcAgent, type GrpcAgentFlavour, type GrpcAgentHandle } from '../harness/grpc-agent.ts';
import { finishedAttempt, holder, listing, receivedOf, type Received } from '../harness/holders.ts';
import { startRestAgent, type RestAgentHandle, type RestAnswer } from '../harness/rest-agent.ts';
import type { ScriptedHandlers } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await h.closeFleetsAndProducers();
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** The not-found window short, the follow and its slow polls quick: a LOST comes within seconds where it comes at all. */
const FLEET = { notFoundWindowMs: 1_000, notFoundThreshold: 3, reconcileIntervalMs: 300, followBackoff: { baseMs: 50, capMs: 200 }, slowPollMs: 300 };

const errorInfo = (reason: string, domain = 'a2a-protocol.org') => ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain });
const STATUS_WITHOUT_ERROR_INFO = JSON.stringify({ error: { code: 404, status: 'NOT_FOUND', message: 'Not Found' } });
const ANOTHER_APIS_REASON = JSON.stringify({ error: { code: 404, status: 'NOT_FOUND', message: 'Not Found', details: [errorInfo('NOT_FOUND', 'googleapis.com')] } });
const A2A_TASK_NOT_FOUND = JSON.stringify({ error: { code: 404, status: 'NOT_FOUND', message: 'Task not found', details: [errorInfo('TASK_NOT_FOUND')] } });

/** Starts a workflow of one step at `cardUrl` (two attempts: a LOST one is delegated again); returns producer and id. */
async function oneStep(cardUrl: string, name: string) {
  const prefix = h.newPrefix();
  const producer = h.producer(prefix);
  await h.fleetFor(prefix, FLEET);
  const workflowId = `${name}-${prefix}`;
  await producer.startWorkflow({ workflowId, maxAttemptsPerStep: 2, steps: [{ name: 'main', agent: cardUrl, message: { text: 'book' } }] });
  return { producer, workflowId };
}

/** The first attempt once finished: never LOST, a person's (AMBIGUOUS), the task it followed still bound. */
async function expectPersonNotLost(producer: Awaited<ReturnType<typeof oneStep>>['producer'], workflowId: string) {
  const row = await finishedAttempt(producer, workflowId, 40_000);
  expect(row.state, JSON.stringify(row.error)).not.toBe('LOST');
  expect(row.state).toBe('AMBIGUOUS');
  expect(row.taskId).toBeTruthy();
  return row;
}

describe('raw JSON-RPC agents: a running task whose reads get a bare 404 (ListTasks shows nothing)', () => {
  /** The task T1 WORKING for ever; its reads answered `read`; ListTasks an empty page. */
  function runningThenAnswering(read: ScriptedHandlers['GetTask']): { handlers: ScriptedHandlers; bookings: string[] } {
    const bookings: string[] = [];
    let received: Received | undefined;
    const handlers: ScriptedHandlers = {
      SendMessage: (params) => ((received = receivedOf(params)), bookings.push(received.messageId), { result: { task: holder('T1', 'WORKING', received) } }),
      GetTask: read,
      SubscribeToTask: read,
      CancelTask: read,
      ListTasks: () => listing([]),
    };
    return { handlers, bookings };
  }
  const http404 = (body: string, contentType = 'application/json') => () => ({ http: { status: 404, body, headers: { 'content-type': contentType } } });
  const BARE: [string, ScriptedHandlers['GetTask']][] = [
    ['HTTP 404, a google.rpc.Status without ErrorInfo', http404(STATUS_WITHOUT_ERROR_INFO)],
    ['HTTP 404, another API\'s ErrorInfo reason', http404(ANOTHER_APIS_REASON)],
    ['a JSON-RPC error whose code is 404 (a proxy\'s status)', () => ({ error: { code: 404, message: 'Not Found' } })],
    ['TASK_NOT_FOUND over -32050 (not the spec\'s code)', () => ({ error: { code: -32050, message: 'gone', data: [errorInfo('TASK_NOT_FOUND')] } })],
    ['HTTP 404, an HTML page (unreadable before too)', http404('<html><body><h1>404 Not Found</h1></body></html>', 'text/html')],
  ];
  for (const [name, read] of BARE) {
    it(`${name}: never LOST, one SendMessage, a person decides (before: LOST, the step sent again)`, async () => {
      const { handlers, bookings } = runningThenAnswering(read);
      const agent = await h.agentWith(handlers);
      const { producer, workflowId } = await oneStep(agent.cardUrl, 'jsonrpc');
      await expectPersonNotLost(producer, workflowId);
      expect(agent.count('GetTask')).toBeGreaterThanOrEqual(1);
      expect(bookings).toHaveLength(1);
    }, 60_000);
  }

  it('control: the spec\'s -32001 still ends LOST after the window, and the step is delegated again', async () => {
    const { handlers, bookings } = runningThenAnswering(() => ({ error: { code: -32001, message: 'Task not found', data: [errorInfo('TASK_NOT_FOUND')] } }));
    const agent = await h.agentWith(handlers);
    const { producer, workflowId } = await oneStep(agent.cardUrl, 'jsonrpc-control');
    const row = await finishedAttempt(producer, workflowId, 40_000);
    expect(row).toMatchObject({ state: 'LOST', error: { code: 'TASK_LOST' } });
    await eventually(async () => bookings.length === 2, 'the LOST step delegated again', 20_000);
  }, 60_000);
});

describe('raw HTTP+JSON agents: a running task whose /tasks/{id} routes answer a bare 404 (ListTasks shows nothing)', () => {
  /** POST /message:send: T1 WORKING; GET /tasks: an empty page; every /tasks/T1… route: HTTP 404 with `body`. */
  function restRunningThen404(body: string): (method: string, path: string, request: any) => RestAnswer {
    return (method, path, request) => {
      if (method === 'POST' && path === '/message:send') return { status: 200, body: { task: holder('T1', 'WORKING', receivedOf(request)) } };
      if (method === 'GET' && path === '/tasks') return { status: 200, body: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } };
      return { status: 404, raw: { body, contentType: 'application/json' } };
    };
  }
  async function restAgent(body: string): Promise<RestAgentHandle> {
    const agent = await startRestAgent(restRunningThen404(body));
    closers.push(() => agent.close());
    return agent;
  }
  const sends = (agent: RestAgentHandle) => agent.count('POST /message:send');

  for (const [name, body] of [['a google.rpc.Status without ErrorInfo', STATUS_WITHOUT_ERROR_INFO], ['another API\'s ErrorInfo reason', ANOTHER_APIS_REASON]] as const) {
    it(`${name}: never LOST, one SendMessage, a person decides (before: LOST, the step sent again)`, async () => {
      const agent = await restAgent(body);
      const { producer, workflowId } = await oneStep(agent.cardUrl, 'rest');
      await expectPersonNotLost(producer, workflowId);
      expect(agent.count('GET /tasks/T1')).toBeGreaterThanOrEqual(1);
      expect(sends(agent)).toBe(1);
    }, 60_000);
  }

  it('control: the ErrorInfo reason TASK_NOT_FOUND still ends LOST after the window, and the step is delegated again', async () => {
    const agent = await restAgent(A2A_TASK_NOT_FOUND);
    const { producer, workflowId } = await oneStep(agent.cardUrl, 'rest-control');
    const row = await finishedAttempt(producer, workflowId, 40_000);
    expect(row).toMatchObject({ state: 'LOST', error: { code: 'TASK_LOST' } });
    await eventually(async () => sends(agent) === 2, 'the LOST step delegated again', 20_000);
  }, 60_000);
});

describe('@a2a-js/sdk gRPC agents behind an interceptor answering every read with a bare NOT_FOUND', () => {
  /** A real gRPC agent of `flavour`; `behaviour` wrapped to count the executions (every flavour's). */
  async function grpcAgent(flavour: GrpcAgentFlavour, behaviour: Behaviour): Promise<{ agent: GrpcAgentHandle; executions: string[] }> {
    const executions: string[] = [];
    const agent = await startGrpcAgent({ flavour, behaviour: (request) => (executions.push(request.messageId), behaviour(request)) });
    closers.push(() => agent.stop());
    return { agent, executions };
  }

  it('1.0 (sdk 1.3.0): the task read by ListTasks instead, COMPLETED with its result, one SendMessage (before: AMBIGUOUS once it finished, its result unread)', async () => {
    const { agent, executions } = await grpcAgent('1.0', runsSlowly(1_500, 'booked'));
    agent.answerReadsWith({ code: 5 });
    const { producer, workflowId } = await oneStep(agent.cardUrl, 'grpc-10');
    const row = await finishedAttempt(producer, workflowId, 40_000);
    expect(row.state, JSON.stringify(row.error)).toBe('COMPLETED');
    expect(artifactText(await viewOf(producer, workflowId), 'result')).toBe('booked');
    expect(agent.readsAnswered).toBeGreaterThanOrEqual(1);
    expect(agent.requestCount('ListTasks')).toBeGreaterThanOrEqual(1);
    expect(executions).toHaveLength(1);
  }, 60_000);

  it('0.3 (sdk 0.3.14, no ListTasks): never LOST, one SendMessage, a person decides (before: LOST, the step sent again)', async () => {
    const { agent, executions } = await grpcAgent('v03', runsSlowly(120_000));
    agent.answerReadsWith({ code: 5 });
    const { producer, workflowId } = await oneStep(agent.cardUrl, 'grpc-03');
    await expectPersonNotLost(producer, workflowId);
    expect(agent.readsAnswered).toBeGreaterThanOrEqual(1);
    expect(executions).toHaveLength(1);
  }, 60_000);
});

describe('what a lost task looks like from each agent now', () => {
  it('an A2A 0.3 gRPC agent (sdk 0.3.14: NOT_FOUND, no ErrorInfo) that restarted and forgot the task: a person decides, never LOST', async () => {
    const executions: string[] = [];
    const agent = await startGrpcAgent({ flavour: 'v03', behaviour: (request) => (executions.push(request.messageId), runsSlowly(120_000)(request)) });
    closers.push(() => agent.stop());
    const { producer, workflowId } = await oneStep(agent.cardUrl, 'grpc-03-restart');
    await eventually(async () => (await producer.journal.getDelegation({ workflowId, delegationId: 'main.1' }))?.taskId !== undefined, 'task bound', 20_000);
    await agent.restart();
    const row = await expectPersonNotLost(producer, workflowId);
    expect(row.error?.code).toBe('PROTOCOL_ERROR');
    expect(executions).toHaveLength(1);
  }, 60_000);

  it('control: a 1.0 gRPC agent (sdk 1.3.0: NOT_FOUND with the ErrorInfo TASK_NOT_FOUND) that restarted: LOST after the window, then delegated again', async () => {
    const executions: string[] = [];
    const agent = await startGrpcAgent({ behaviour: (request) => (executions.push(request.messageId), runsSlowly(120_000)(request)) });
    closers.push(() => agent.stop());
    const { producer, workflowId } = await oneStep(agent.cardUrl, 'grpc-10-restart');
    await eventually(async () => (await producer.journal.getDelegation({ workflowId, delegationId: 'main.1' }))?.taskId !== undefined, 'task bound', 20_000);
    await agent.restart();
    const row = await finishedAttempt(producer, workflowId, 40_000);
    expect(row).toMatchObject({ state: 'LOST', error: { code: 'TASK_LOST' } });
    await eventually(async () => executions.length === 2, 'the LOST step delegated again', 20_000);
  }, 60_000);

  it('control: a 1.0 HTTP+JSON agent (sdk 1.3.0: 404 with the ErrorInfo TASK_NOT_FOUND) that restarted: LOST after the window, then delegated again', async () => {
    const agent: DemoAgentHandle = await startDemoAgent({ behaviour: runsSlowly(120_000), bindings: ['HTTP+JSON'] });
    closers.push(() => agent.stop());
    const { producer, workflowId } = await oneStep(agent.cardUrl, 'rest-10-restart');
    await eventually(async () => (await producer.journal.getDelegation({ workflowId, delegationId: 'main.1' }))?.taskId !== undefined, 'task bound', 20_000);
    await agent.restart({ forgetTasks: true });
    const row = await finishedAttempt(producer, workflowId, 40_000);
    expect(row).toMatchObject({ state: 'LOST', error: { code: 'TASK_LOST' } });
    await eventually(async () => agent.sendMessageCount() === 2, 'the LOST step delegated again', 20_000);
  }, 60_000);
});
