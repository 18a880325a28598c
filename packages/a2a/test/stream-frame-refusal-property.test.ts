/**
 * A refusal the agent reports in a frame of an event stream is not the whole answer (attack 31, `inStreamFrame` in
 * src/errors.ts): an agent answers a refusal before any work as plain JSON (spec §9.4, the SDKs), so an error in a
 * frame comes from a stream that had opened, whose other frames may name the task our message created. Before, a send
 * stream (or an SSE-framed SendMessage answer) whose first frame said -32602 and whose next frame was our task
 * COMPLETED was read as "nothing created" and the step re-delegated: booked twice. The property: every refusal code of
 * the spec's table, on every HTTP binding, as `event: error` or as an `error` member of a data frame, whatever frames
 * follow, is effect `maybe` (`sendEffectOf`); the same refusal as the whole answer (plain JSON, or a plain call's
 * answer framed as one event) stays `none`. And a plain call's answer framed as several events is an unreadable answer
 * (`severalEvents` in src/jsonrpc.ts; a SendMessage whose first event is our task excepted: that task is followed):
 * ListTasks framed as an empty page then one listing our task was read as the empty page, and our message resent.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, ProtocolError, sendEffectOf } from '../src/errors.ts';
import type { A2ATransport } from '../src/transport.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

type Binding = 'jsonrpc-1.0' | 'jsonrpc-0.3' | 'rest-1.0';

/** Refusals of the spec's table (effect none), by binding: JSON-RPC code, or HTTP+JSON ErrorInfo reason with its status. */
const JSONRPC_10 = [-32700, -32600, -32601, -32602, -32003, -32004, -32005, -32008, -32009];
const JSONRPC_03 = [-32700, -32600, -32601, -32602, -32003, -32004, -32005];
const REST_REASONS = ['PUSH_NOTIFICATION_NOT_SUPPORTED', 'UNSUPPORTED_OPERATION', 'CONTENT_TYPE_NOT_SUPPORTED', 'EXTENSION_SUPPORT_REQUIRED', 'VERSION_NOT_SUPPORTED'];

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };
const task10 = { id: 'T1', contextId: 'c-ours', status: { state: 'TASK_STATE_COMPLETED' }, history: [message] };
const task03 = { kind: 'task', id: 'T1', contextId: 'c-ours', status: { state: 'completed' }, history: [{ kind: 'message', messageId: 'm-ours', role: 'user', parts: [{ kind: 'text', text: 'hi' }] }] };

let answer: (requestBody: string) => { status: number; contentType: string; body: string } = () => ({ status: 200, contentType: 'application/json', body: '{}' });
let server: RawServer;
beforeAll(async () => {
  server = await startRawServer((request, response) => {
    const { status, contentType, body } = answer(request.body);
    response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
});
afterAll(() => server.close());

function transportFor(binding: Binding): A2ATransport {
  if (binding === 'rest-1.0') return createTransport({ url: server.url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' });
  return createTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: binding === 'jsonrpc-0.3' ? '0.3' : '1.0' });
}

/** The error body (JSON-RPC envelope carrying the request's id, or google.rpc.Status) of refusal `which`. */
function errorBody(binding: Binding, which: number, requestBody: string): string {
  if (binding === 'rest-1.0') {
    const reason = REST_REASONS[which % REST_REASONS.length]!;
    return JSON.stringify({ error: { code: 400, status: 'FAILED_PRECONDITION', message: 'refused', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' }] } });
  }
  const codes = binding === 'jsonrpc-0.3' ? JSONRPC_03 : JSONRPC_10;
  const { id } = JSON.parse(requestBody) as { id: unknown };
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code: codes[which % codes.length], message: 'refused' } });
}

/** A frame naming our task (what follows the refusal), as the binding frames a result. */
function taskFrame(binding: Binding, requestBody: string): string {
  const result = binding === 'jsonrpc-0.3' ? task03 : { task: task10 };
  if (binding === 'rest-1.0') return JSON.stringify(result);
  return JSON.stringify({ jsonrpc: '2.0', id: (JSON.parse(requestBody) as { id: unknown }).id, result });
}

/** What the call threw. `plain`: SendMessage (its answer framed as SSE); else SendStreamingMessage read to its end. */
async function thrownBy(binding: Binding, plain: boolean): Promise<unknown> {
  const agent = transportFor(binding);
  try {
    if (plain) await agent.sendMessage({ message });
    else for await (const _event of agent.sendStreamingMessage({ message })) { /* read to the end */ }
    return 'no error';
  } catch (error) {
    return error;
  }
}

const bindings = fc.constantFrom<Binding>('jsonrpc-1.0', 'jsonrpc-0.3', 'rest-1.0');

describe('a refusal in a frame of an event stream', () => {
  it('property: any refusal code, any HTTP binding, event: error or a data frame, any frames after it: effect maybe; as the whole answer: none', async () => {
    await fc.assert(
      fc.asyncProperty(bindings, fc.nat(50), fc.boolean(), fc.nat(3), fc.boolean(), async (binding, which, errorEvent, framesAfter, plain) => {
        // The SSE-framed answer to a plain call is read for its first frame on the JSON-RPC binding only.
        const asPlain = plain && binding !== 'rest-1.0';
        answer = (requestBody) => {
          const frames = [`${errorEvent ? 'event: error\n' : ''}data: ${errorBody(binding, which, requestBody)}\n\n`];
          for (let index = 0; index < framesAfter; index++) frames.push(`data: ${taskFrame(binding, requestBody)}\n\n`);
          return { status: 200, contentType: 'text/event-stream', body: frames.join('') };
        };
        const framed = await thrownBy(binding, asPlain);
        expect(framed).toBeInstanceOf(A2AError);
        // A plain call's answer framed as one event is the whole answer; as several, an unreadable one.
        expect(sendEffectOf(framed, { namesTask: false })).toBe(asPlain && framesAfter === 0 ? 'none' : 'maybe');
        if (asPlain && framesAfter > 0) expect(framed).toBeInstanceOf(ProtocolError);
        // The same refusal as the whole answer (plain JSON, before any stream) still proves nothing was created.
        answer = (requestBody) => ({ status: binding === 'rest-1.0' ? 400 : 200, contentType: 'application/json', body: errorBody(binding, which, requestBody) });
        const whole = await thrownBy(binding, asPlain);
        expect(whole).toBeInstanceOf(A2AError);
        expect(sendEffectOf(whole, { namesTask: false })).toBe('none');
      }),
      { numRuns: 120 },
    );
  }, 120_000);
});

describe('a plain call answered as an event stream of several events', () => {
  const pageOf = (tasks: unknown[]) => ({ tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length });
  const results: Record<'getTask' | 'listTasks' | 'sendMessage' | 'cancelTask', (v03: boolean) => unknown[]> = {
    getTask: (v03) => [v03 ? task03 : task10, { ...(v03 ? task03 : task10), id: 'T2' }],
    listTasks: () => [pageOf([]), pageOf([task10])],
    sendMessage: (v03) => [v03 ? task03 : { task: task10 }, v03 ? { ...task03, id: 'T2' } : { task: { ...task10, id: 'T2' } }],
    cancelTask: (v03) => [v03 ? task03 : task10, v03 ? task03 : task10],
  };
  it('property: one event is read as the JSON answer would be; two or more are an unreadable answer (ProtocolError, delivered), but for a SendMessage whose first event is our task', async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.constantFrom<keyof typeof results>('getTask', 'listTasks', 'sendMessage', 'cancelTask'), fc.array(fc.nat(1), { minLength: 1, maxLength: 4 }), async (v03, call, picks) => {
        if (v03 && call === 'listTasks') return; // 0.3 has no tasks/list
        const binding: Binding = v03 ? 'jsonrpc-0.3' : 'jsonrpc-1.0';
        answer = (requestBody) => {
          const { id } = JSON.parse(requestBody) as { id: unknown };
          const body = picks.map((pick) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: results[call](v03)[pick] })}\n\n`).join('');
          return { status: 200, contentType: 'text/event-stream', body };
        };
        const agent = transportFor(binding);
        const outcome = await (call === 'getTask' ? agent.getTask({ id: 'T1' }) : call === 'listTasks' ? agent.listTasks({ contextId: 'c-ours' }) : call === 'sendMessage' ? agent.sendMessage({ message }) : agent.cancelTask({ id: 'T1' })).then(
          () => 'read',
          (error: unknown) => error,
        );
        // A SendMessage whose first event is our success envelope is read from it (its task is followed).
        if (picks.length === 1 || call === 'sendMessage') expect(outcome).toBe('read');
        else {
          expect(outcome).toBeInstanceOf(ProtocolError);
          expect((outcome as ProtocolError).delivery).toBe('received');
        }
      }),
      { numRuns: 120 },
    );
  }, 120_000);
});
