/**
 * FINDING (mends31; kind: a status without A2A proof read as the agent's answer, here "this operation is not served").
 * Input: an agent that holds our message (crash window 2: sent, not recorded; or a send whose answer was lost), and a
 * ListTasks answered by a server on the way with a bare "not served": gRPC UNIMPLEMENTED without an ErrorInfo (a
 * proxy's or a gateway's for a route it does not serve yet), HTTP 405 whose body is no A2A error, 405 put in a JSON-RPC
 * `code`, METHOD_NOT_FOUND over a code the spec does not define. Observed (before): the search read "the agent cannot
 * list tasks" (`unsupported`): a deduplicating agent's message was sent again (the task it held never adopted, a second
 * booking where the agent's deduplication is not what was declared), any other agent's delegation went to a person at
 * once, though the next ListTasks lists the task. Also a stream's COMPLETED without artifacts whose collecting GetTask
 * got a bare 405 settled COMPLETED without its result (R26). Expected: only the spec's MethodNotFoundError or
 * UnsupportedOperationError in the binding's own form (JSON-RPC -32601 / -32004; the ErrorInfo reason
 * METHOD_NOT_FOUND / UNSUPPORTED_OPERATION on HTTP+JSON and gRPC: `operationUnsupportedProven`) is "unsupported"; a
 * bare one is a search that failed (one counted round, then a person: SEARCH_UNAVAILABLE), a read that failed (the
 * follow reads the task by ListTasks). Controls: the spec's forms still read "unsupported" (resent to a deduplicating
 * agent, a person otherwise), as before.
 * Real redis-server, real fleet, raw node:http agents (JSON-RPC, HTTP+JSON) and a real @a2a-js/sdk 1.3.0 gRPC agent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Producer } from '@durable-a2a/producer';
import { artifactText, finished, recordOf, ref, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { startGrpcAgent, type GrpcAgentHandle } from '../harness/grpc-agent.ts';
import { holder, listing, type Received } from '../harness/holders.ts';
import { startRestAgent, type RestAgentHandle, type RestAnswer } from '../harness/rest-agent.ts';
import { ev, SU, taskEvent, type ScriptedAnswer } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await h.closeFleetsAndProducers();
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** Reconcile rounds quick; three unusable answers in a row end with a person (the default limit). */
const FLEET = { reconcileIntervalMs: 300, followBackoff: { baseMs: 50, capMs: 200 } };

const errorInfo = (reason: string) => ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' });
const STATUS_405_WITHOUT_ERROR_INFO = JSON.stringify({ error: { code: 405, status: 'UNIMPLEMENTED', message: 'Method Not Allowed' } });
const http405 = (): ScriptedAnswer => ({ http: { status: 405, body: STATUS_405_WITHOUT_ERROR_INFO } });

/** The first attempt, once finished: AMBIGUOUS for a person, never sent again. */
async function personNeverResent(producer: Producer, id: string, sends: () => number, code?: string) {
  const row = await finished(producer, id, 40_000);
  expect(row.state, JSON.stringify(row.error)).toBe('AMBIGUOUS');
  if (code) expect(row.error?.code).toBe(code);
  expect(sends()).toBe(0);
  return row;
}

describe('raw JSON-RPC agents: sent, not recorded; the first ListTasks answered by a proxy with a bare "not served"', () => {
  /**
   * The agent holds T1 (COMPLETED, our message in its history); ListTasks answers `first` once, then lists T1. A
   * SendMessage (a resend) books T2.
   */
  async function holdingT1(first: () => ScriptedAnswer, deduplicating: boolean) {
    let messageId = '';
    const received = (contextId: string | undefined): Received => ({ messageId, contextId: contextId ?? 'C-agent' });
    let context: string | undefined;
    const agent = await h.agentWith({
      ListTasks: (params, call) => ((context ??= params.contextId), call.count === 1 ? first() : listing([holder('T1', 'COMPLETED', received(context))])),
      GetTask: (params) => ({ result: holder(params.id, 'COMPLETED', received(context)) }),
      SendMessage: (params) => ({ result: { task: holder('T2', 'COMPLETED', { messageId: params.message.messageId, contextId: params.message.contextId }) } }),
    });
    const { producer, id } = await h.sentNotRecorded(agent, (sent) => (messageId = sent), { ...FLEET, ...(deduplicating ? { deduplicatingAgents: [agent.cardUrl] } : {}) });
    return { agent, producer, id };
  }

  const BARE: [string, () => ScriptedAnswer][] = [
    ['HTTP 405, a google.rpc.Status without ErrorInfo (a gateway\'s)', http405],
    ['a JSON-RPC error whose code is 405 (a proxy\'s status)', () => ({ error: { code: 405, message: 'Method Not Allowed' } })],
    ['METHOD_NOT_FOUND over -32050 (not the spec\'s code)', () => ({ error: { code: -32050, message: 'no such method', data: [errorInfo('METHOD_NOT_FOUND')] } })],
  ];
  for (const [name, first] of BARE) {
    it(`${name}, a deduplicating agent: T1 adopted by the next search, COMPLETED, nothing sent again (before: our message resent, T2 booked)`, async () => {
      const { agent, producer, id } = await holdingT1(first, true);
      const row = await finished(producer, id, 40_000);
      expect(row, JSON.stringify(row.error)).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
      expect(artifactText(await viewOf(producer, id), 'a-T1')).toBe('T1\'s booking');
      expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(2);
      expect(agent.count('SendMessage')).toBe(0);
    }, 60_000);
  }

  it('HTTP 405 without ErrorInfo, an agent that does not deduplicate: T1 adopted by the next search (before: a person at once, "cannot list tasks")', async () => {
    const { agent, producer, id } = await holdingT1(http405, false);
    const row = await finished(producer, id, 40_000);
    expect(row, JSON.stringify(row.error)).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);

  it('a bare 405 on every ListTasks: bounded rounds, then a person (SEARCH_UNAVAILABLE), never sent again', async () => {
    const { agent, producer, id } = await holdingT1(http405, true);
    agent.script({ ListTasks: http405 });
    const row = await personNeverResent(producer, id, () => agent.count('SendMessage'));
    expect(row.error?.message ?? '').toContain('searches for our message in a row failed');
    expect(row.error?.message ?? '').toContain('HTTP 405, no ErrorInfo');
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('control: the spec\'s -32601 still reads "cannot list tasks": a deduplicating agent\'s message is sent again, as before', async () => {
    const { agent, producer, id } = await holdingT1(() => ({ error: { code: -32601, message: 'Method not found' } }), true);
    await eventually(async () => agent.count('SendMessage') === 1, 'the message resent', 30_000);
    expect(agent.calls('SendMessage')[0]!.params.message.messageId).toBe((await recordOf(producer, id))!.messageId);
  }, 60_000);
});

describe('a raw HTTP+JSON agent: sent, not recorded; GET /tasks answered 405 by a proxy', () => {
  /** The agent holds T1 (COMPLETED); GET /tasks answers `first` once (`always`: every time), then lists T1. */
  async function restHoldingT1(first: RestAnswer, deduplicating: boolean) {
    let messageId = '';
    let lists = 0;
    const received = (): Received => ({ messageId, contextId: 'C-agent' });
    const agent: RestAgentHandle = await startRestAgent((method, path) => {
      if (method === 'GET' && path === '/tasks') return ++lists === 1 ? first : { status: 200, body: { tasks: [holder('T1', 'COMPLETED', received())], nextPageToken: '', pageSize: 50, totalSize: 1 } };
      if (method === 'GET' && path === '/tasks/T1') return { status: 200, body: holder('T1', 'COMPLETED', received()) };
      if (method === 'POST' && path === '/message:send') return { status: 200, body: { task: holder('T2', 'COMPLETED', received()) } };
      return { status: 404, raw: { body: 'no route', contentType: 'text/plain' } };
    });
    closers.push(() => agent.close());
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `rest-${prefix}` });
    messageId = (await recordOf(producer, id))!.messageId;
    const fence = await producer.journal.claim(ref(id), 'test/crash-window-2');
    await producer.journal.markSending(ref(id), fence, { url: `${agent.url}/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' });
    await h.fleetFor(prefix, { ...FLEET, ...(deduplicating ? { deduplicatingAgents: [agent.cardUrl] } : {}) });
    return { agent, producer, id, sends: () => agent.count('POST /message:send') };
  }

  it('405 without ErrorInfo, a deduplicating agent: T1 adopted, COMPLETED, nothing sent again (before: our message resent, T2 booked)', async () => {
    const { agent, producer, id, sends } = await restHoldingT1({ status: 405, raw: { body: STATUS_405_WITHOUT_ERROR_INFO, contentType: 'application/json' } }, true);
    const row = await finished(producer, id, 40_000);
    expect(row, JSON.stringify(row.error)).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(agent.count('GET /tasks')).toBeGreaterThanOrEqual(2);
    expect(sends()).toBe(0);
  }, 60_000);

  it('control: 400 with the ErrorInfo UNSUPPORTED_OPERATION (the binding\'s own form), an agent that does not deduplicate: a person at once, as before', async () => {
    const refusal = { status: 400, body: { error: { code: 400, status: 'FAILED_PRECONDITION', message: 'no listing here', details: [errorInfo('UNSUPPORTED_OPERATION')] } } };
    const { agent, producer, id, sends } = await restHoldingT1(refusal, false);
    const row = await personNeverResent(producer, id, sends);
    expect(row.error?.message ?? '').toContain('cannot list tasks');
    expect(agent.count('GET /tasks')).toBe(1);
  }, 60_000);
});

describe('an @a2a-js/sdk 1.3.0 gRPC agent behind a proxy: the send\'s answer lost after the agent booked, ListTasks UNIMPLEMENTED once', () => {
  async function grpcAgent(): Promise<{ agent: GrpcAgentHandle; executions: string[] }> {
    const executions: string[] = [];
    const agent = await startGrpcAgent({ behaviour: (request) => (executions.push(request.messageId), completesWith('booked')(request)) });
    closers.push(() => agent.stop());
    return { agent, executions };
  }
  async function delegateTo(agent: GrpcAgentHandle, deduplicating: boolean) {
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, { ...FLEET, ...(deduplicating ? { deduplicatingAgents: [agent.cardUrl] } : {}) });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `grpc-${prefix}` });
    return { producer, id };
  }

  it('a bare UNIMPLEMENTED (no ErrorInfo), a deduplicating agent: the booked task adopted by the next search, COMPLETED, one execution', async () => {
    const { agent, executions } = await grpcAgent();
    agent.answerSendsWith({ code: 14, afterHandler: true });
    agent.answerReadsWith({ code: 12, alsoListTasks: true, times: 1 });
    const { producer, id } = await delegateTo(agent, true);
    const row = await finished(producer, id, 40_000);
    expect(row.state, JSON.stringify(row.error)).toBe('COMPLETED');
    expect(artifactText(await viewOf(producer, id), 'result')).toBe('booked');
    expect(agent.readsAnswered).toBe(1);
    expect(executions).toHaveLength(1);
  }, 60_000);

  it('control: FAILED_PRECONDITION with the ErrorInfo UNSUPPORTED_OPERATION still reads "cannot list tasks": no adoption, never COMPLETED from the search', async () => {
    const { agent, executions } = await grpcAgent();
    agent.answerSendsWith({ code: 14, afterHandler: true });
    agent.answerReadsWith({ code: 9, reason: 'UNSUPPORTED_OPERATION', alsoListTasks: true });
    const { producer, id } = await delegateTo(agent, false);
    const row = await finished(producer, id, 40_000);
    expect(row.state, JSON.stringify(row.error)).toBe('AMBIGUOUS');
    expect(agent.requestCount('ListTasks')).toBe(0);
    expect(executions).toHaveLength(1);
  }, 60_000);
});

describe('a stream\'s COMPLETED without artifacts whose collecting GetTask gets a bare 405 (R26)', () => {
  it('never settled without its result: the task read by ListTasks, COMPLETED with its artifact (before: COMPLETED, no result)', async () => {
    let received: Received | undefined;
    const agent = await h.agentWith({
      SendMessage: (params) => ((received = { messageId: params.message.messageId, contextId: params.message.contextId }), { result: { task: holder('T1', 'WORKING', received) } }),
      SubscribeToTask: () => ({ sse: [taskEvent(holder('T1', 'WORKING', received!)), ev(SU('COMPLETED', { taskId: 'T1', contextId: received!.contextId }))] }),
      GetTask: http405,
      ListTasks: () => listing([holder('T1', 'COMPLETED', received!)]),
    });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, FLEET);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `stream-${prefix}` });
    const row = await finished(producer, id, 40_000);
    expect(agent.count('GetTask')).toBeGreaterThanOrEqual(1);
    expect(row.state, JSON.stringify(row.error)).toBe('COMPLETED');
    expect(artifactText(await viewOf(producer, id), 'a-T1')).toBe('T1\'s booking');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);
});
