/**
 * edges35: how agents' answers are judged, end to end (real redis-server, real fleet, raw node:http agents for exact
 * bytes). Each FIXED FINDING was verified failing on main.
 */
import { describe, expect, it } from 'vitest';
import { FAST_ATTACK_OPTIONS, bookingThenAnswering, closedAfterEach, useFieldCases } from '../harness/field-cases.ts';
import { startRestAgent, type RestAgentHandle, type RestAnswer } from '../harness/rest-agent.ts';
import { agentMessage, task } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const restAgents = closedAfterEach<RestAgentHandle>(h, (agent) => agent.close());
const refusal = (id: unknown) => ({ jsonrpc: '2.0', id, error: { code: -32602, message: 'Invalid params' } });

/**
 * An HTTP+JSON agent whose message:send makes T1 (`made`, our context and message) and answers `sendAnswer`; GetTask
 * answers `read(T1)`, ListTasks lists T1 when `listed`. Closed after the test.
 */
async function restAgentMaking(made: (message: any) => Record<string, unknown>, sendAnswer: (task: Record<string, unknown>) => RestAnswer, read: (task: Record<string, unknown>) => RestAnswer, listed: boolean) {
  let t1: Record<string, unknown> | undefined;
  const agent = await startRestAgent((method, path, body) => {
    if (method === 'POST' && path === '/message:send') return sendAnswer((t1 ??= made(body.message)));
    if (method === 'GET' && path === '/tasks') return { status: 200, body: { tasks: t1 && listed ? [t1] : [], nextPageToken: '', pageSize: 50, totalSize: t1 && listed ? 1 : 0 } };
    if (method === 'GET' && path === '/tasks/T1' && t1) return read(t1);
    return { status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'no route' } } };
  }, { streaming: false });
  restAgents.push(agent);
  return agent;
}

/** A one-step workflow by skill over `aCardUrl` and B: B never asked, one attempt, whose record is returned. */
async function neverTheSecondAgent(aCardUrl: string, fleetOptions: Record<string, unknown> = {}) {
  const { b, view } = await h.stepOverTwo(aCardUrl, { ...FAST_ATTACK_OPTIONS, ...fleetOptions }, 45_000);
  expect(b.count('SendMessage') + b.count('SendStreamingMessage')).toBe(0);
  expect(view.steps[0]!.attempts).toHaveLength(1);
  return { view, attempt: view.steps[0]!.attempts[0]! };
}

/**
 * `restAgentMaking`'s agent A (its arguments as there), then the step over A and B (`neverTheSecondAgent`): A's
 * message:send called once; the one attempt's record.
 */
async function onceOverRest(...agent: Parameters<typeof restAgentMaking>) {
  const a = await restAgentMaking(...agent);
  const { attempt } = await neverTheSecondAgent(a.cardUrl);
  expect(a.count('POST /message:send')).toBe(1);
  return attempt;
}

/*
 * FIXED FINDING (kind: a refusal's code under a status that cannot refuse). Input: an agent books (T1 COMPLETED a1),
 * then its SendMessage answer is a 5xx whose body carries a refusal's code: JSON-RPC, HTTP 502 with
 * `{"jsonrpc":"2.0","id":<ours>,"error":{"code":-32602}}` (a gateway that speaks JSON-RPC, a server that threw after the
 * work); HTTP+JSON, HTTP 503 with the same envelope. Observed on main: `hotel.1 FAILED INVALID_PARAMS`, `hotel.2
 * COMPLETED` at agent B: booked twice. Expected: a 5xx is a server's trouble, never the agent's refusal (HTTP+JSON's code
 * is the status, spec §11.6, its refusals 4xx; JSON-RPC refusals come on 200 from the SDKs): effect maybe, the search
 * adopts T1, B never asked. Fixed: `statusMayCarryRefusal` in `codeRefuses` (packages/a2a/src/errors.ts), for every
 * HTTP binding. Property: packages/a2a/test/server-error-refusal-property.test.ts.
 */
describe('edges35: a 5xx carrying a refusal\'s code is no refusal', () => {
  it('JSON-RPC: SendMessage booked, answered HTTP 502 with -32602 under our id: never FAILED and sent to B; T1 adopted', async () => {
    const a = await h.agentWith(bookingThenAnswering((call) => ({ http: { status: 502, body: JSON.stringify(refusal(call.id)) } })));
    const { attempt } = await neverTheSecondAgent(a.cardUrl);
    expect(a.count('SendMessage')).toBe(1);
    expect(attempt).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  }, 60_000);

  it('HTTP+JSON: message:send booked, answered HTTP 503 with a JSON-RPC -32602 envelope: never FAILED and sent to B; T1 adopted', async () => {
    const attempt = await onceOverRest(
      (message) => task('T1', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a1: 'booked' } }),
      () => ({ status: 503, raw: { body: JSON.stringify(refusal(null)), contentType: 'application/json' } }),
      (t1) => ({ status: 200, body: t1 }),
      true,
    );
    expect(attempt).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  }, 60_000);
});

/*
 * FIXED FINDING (kind: an ErrorInfo of another domain names no A2A error). Input: an HTTP+JSON agent takes our message
 * as T1 (SUBMITTED); every GetTask(T1) after that is HTTP 404 with a `google.rpc.Status` whose ErrorInfo says
 * TASK_NOT_FOUND in the domain `googleapis.com` (a gateway's or another API's), and ListTasks lists nothing. Observed on
 * main: the reads counted toward the not-found window, `hotel.1 LOST`, the step went to B. Expected: only an ErrorInfo
 * of the A2A domain names an A2A error (spec §10.6, §11.6: `domain` "a2a-protocol.org"); another's proves delivery and
 * nothing about the task: never LOST, never re-delegated. Fixed: `a2aReasonOf` (packages/a2a/src/errors.ts), read by
 * the HTTP and gRPC mappings. Property: packages/a2a/test/server-error-refusal-property.test.ts.
 */
describe('edges35: another domain\'s TASK_NOT_FOUND proves nothing about our task', () => {
  it('GetTask(T1) answered 404 with ErrorInfo TASK_NOT_FOUND of domain googleapis.com, for ever: never LOST and re-delegated to B', async () => {
    const errorInfo = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'googleapis.com' };
    const attempt = await onceOverRest(
      (message) => task('T1', 'SUBMITTED', { contextId: message.contextId, history: [message] }),
      (t1) => ({ status: 200, body: { task: t1 } }),
      () => ({ status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'not found', details: [errorInfo] } } }),
      false,
    );
    // Reads it cannot use, bounded: a person decides (never the not-found window's LOST).
    expect(attempt).toMatchObject({ state: 'AMBIGUOUS', taskId: 'T1' });
  }, 60_000);
});

/*
 * FIXED FINDING (kind: an answer over a limit read as if whole). Input: SendMessage (or SendStreamingMessage, its one
 * event) answered by a Message, not a Task, whose text is 100 KiB: over `statusMessageBytes` (64 KiB). A direct Message
 * is the step's whole result (spec §3.1.1; the view's `resultText`). Observed on main: `hotel.1 COMPLETED` with an
 * excerpt of the first 64 KiB as its result, and the workflow went on with it: the rest of the result lost, nothing
 * telling a person. Expected: as artifacts over `artifactBytesPerDelegation` (A31, `withinArtifactLimit`): AMBIGUOUS
 * with LIMIT_EXCEEDED (`statusMessageBytes`), the excerpt kept for the person, never re-delegated (the agent did the
 * work). Fixed: the journal's one bound of every status write (`withinLimits`, packages/shared/src/journal/status.ts)
 * ends an outcome whose result message it had to cut, whatever channel brought it (send answer, send stream, the
 * reconciler's write of a Message it holds). Property: packages/shared/test/message-answer-limit-property.test.ts.
 */
describe('edges35: a Message answer over statusMessageBytes ends visibly, never COMPLETED with an excerpt', () => {
  const big = (contextId: string) => agentMessage(`${'r'.repeat(100 * 1024)}END`, { contextId });
  for (const method of ['SendMessage', 'SendStreamingMessage'] as const) {
    it(`${method} answered by a Message of 100 KiB: AMBIGUOUS LIMIT_EXCEEDED, the excerpt kept, never sent to B`, async () => {
      const a = await h.agentWith(
        method === 'SendMessage'
          ? { SendMessage: (params) => ({ result: { message: big(params.message.contextId) } }) }
          : { SendStreamingMessage: (params, call) => ({ sse: [`data: ${JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { message: big(params.message.contextId) } })}\n\n`] }) },
      );
      const { view, attempt } = await neverTheSecondAgent(a.cardUrl, method === 'SendStreamingMessage' ? { streamingSends: true } : {});
      expect(a.count(method)).toBe(1);
      expect(attempt).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'statusMessageBytes' } });
      // The excerpt is there for the person, and says it was cut.
      expect(JSON.stringify(attempt)).toContain('message cut by durable-a2a');
      expect(JSON.stringify(view).length).toBeLessThan(1024 * 1024);
    }, 60_000);
  }
});

/*
 * FIXED FINDING (kind: an answer over a limit read as if whole; overstatus35). Input: SendMessage answered by a Task T1
 * COMPLETED with no artifacts whose final status message is 100 KiB of text: over `statusMessageBytes` (64 KiB). A
 * COMPLETED task without artifacts carries its result in that status message (the view's `resultText`, V3). Observed
 * on integrate: `hotel.1 COMPLETED` with an excerpt of the first 64 KiB as its status message, shown as the step's
 * result: the rest lost, nothing telling a person. Expected: as a Message answer over the limit: AMBIGUOUS with
 * LIMIT_EXCEEDED (`statusMessageBytes`), the excerpt kept, never re-delegated; with an artifact the status message is
 * not the result and the task stays COMPLETED (the excerpt only). Fixed: applyStatus-5.lua decides with the row's
 * artifacts after the change (`overLimitIfResult`, `withinLimits`). Property: test/journal/status-result-limit-property.test.ts.
 */
describe('overstatus35: a COMPLETED task whose only result is a status message over statusMessageBytes ends visibly', () => {
  const big = (contextId: string) => agentMessage(`${'r'.repeat(100 * 1024)}END`, { contextId, taskId: 'T1' });
  for (const artifacts of [false, true]) {
    it(`SendMessage answered by Task COMPLETED with a 100 KiB status message and ${artifacts ? 'an artifact: COMPLETED' : 'no artifacts: AMBIGUOUS LIMIT_EXCEEDED'}, the excerpt kept, never sent to B`, async () => {
      const finished = (contextId: string) => task('T1', 'COMPLETED', { contextId, message: big(contextId), ...(artifacts ? { artifacts: { a1: 'booked' } } : {}) });
      let contextId = '';
      const a = await h.agentWith({
        SendMessage: (params) => {
          contextId = params.message.contextId;
          return { result: { task: finished(contextId) } };
        },
        GetTask: () => ({ result: finished(contextId) }),
      });
      const { view, attempt } = await neverTheSecondAgent(a.cardUrl);
      expect(a.count('SendMessage')).toBe(1);
      if (artifacts) expect(attempt).toMatchObject({ state: 'COMPLETED', resultText: 'booked' });
      else expect(attempt).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'statusMessageBytes' } });
      expect(JSON.stringify(attempt)).toContain('message cut by durable-a2a');
      expect(JSON.stringify(view).length).toBeLessThan(1024 * 1024);
    }, 60_000);
  }

  it('SendStreamingMessage: the Task SUBMITTED, then a status update COMPLETED with a 100 KiB message and no artifacts: AMBIGUOUS LIMIT_EXCEEDED, never sent to B', async () => {
    let contextId = '';
    const data = (id: unknown, result: unknown) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`;
    const a = await h.agentWith({
      SendStreamingMessage: (params, call) => {
        contextId = params.message.contextId;
        const statusUpdate = { taskId: 'T1', contextId, status: { state: 'TASK_STATE_COMPLETED', message: big(contextId) } };
        return { sse: [data(call.id, { task: task('T1', 'SUBMITTED', { contextId, history: [params.message] }) }), data(call.id, { statusUpdate })] };
      },
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId, message: big(contextId) }) }),
    });
    const { attempt } = await neverTheSecondAgent(a.cardUrl, { streamingSends: true });
    expect(a.count('SendStreamingMessage')).toBe(1);
    expect(attempt).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'statusMessageBytes' } });
    expect(JSON.stringify(attempt)).toContain('message cut by durable-a2a');
  }, 60_000);
});
