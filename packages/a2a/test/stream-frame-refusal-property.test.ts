/**
 * A refusal the agent reports in a frame of an event stream is not the whole answer (attack 31, `inStreamFrame` in
 * src/errors.ts): an agent answers a refusal before any work as plain JSON (spec §9.4, the SDKs), so an error in a
 * frame comes from a stream that had opened, whose other frames may name the task our message created. Before, a send
 * stream (or an SSE-framed SendMessage answer) whose first frame said -32602 and whose next frame was our task
 * COMPLETED was read as "nothing created" and the step re-delegated: booked twice. The property: every refusal code of
 * the spec's table, on every HTTP binding, as `event: error` or as an `error` member of a data frame, whatever frames
 * follow, is effect `maybe` (`sendEffectOf`); the same refusal as the whole answer (plain JSON) stays `none`.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, sendEffectOf } from '../src/errors.ts';
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
        expect(sendEffectOf(framed, { namesTask: false })).toBe('maybe');
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
