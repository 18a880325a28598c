/**
 * A 2xx body's media-type label is weak evidence; the bytes decide (attack 30, the A33 kind; `jsonBodyOf` in
 * src/response.ts). An agent whose framework labels its JSON `text/html` (Express `res.send(text)`), `text/plain`,
 * `application/octet-stream`, or not at all, answered all the same: before, every such answer was a `ProtocolError`
 * (unreadable), so every delegation to that agent ended with a person, the happy path included. A body that is not
 * JSON is still a `ProtocolError` whatever its label. Byte-exact node:http server; JSON-RPC and HTTP+JSON, 1.0 and 0.3
 * (JSON-RPC), GetTask, ListTasks and SendMessage.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { ProtocolError } from '../src/errors.ts';
import { jsonBodyOf } from '../src/response.ts';
import type { A2ATransport } from '../src/transport.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

type Binding = 'jsonrpc-1.0' | 'jsonrpc-0.3' | 'rest-1.0';
type Method = 'getTask' | 'listTasks' | 'sendMessage';

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };
const task10 = { id: 'T1', contextId: 'c-ours', status: { state: 'TASK_STATE_COMPLETED' }, history: [message], artifacts: [{ artifactId: 'a1', parts: [{ text: 'booked' }] }] };
const task03 = {
  kind: 'task',
  id: 'T1',
  contextId: 'c-ours',
  status: { state: 'completed' },
  history: [{ kind: 'message', messageId: 'm-ours', contextId: 'c-ours', role: 'user', parts: [{ kind: 'text', text: 'hi' }] }],
  artifacts: [{ artifactId: 'a1', parts: [{ kind: 'text', text: 'booked' }] }],
};

/** The result member (JSON-RPC) or the body (REST) answering `method`. */
function resultOf(binding: Binding, method: Method): unknown {
  const value = binding === 'jsonrpc-0.3' ? task03 : task10;
  if (method === 'getTask') return value;
  if (method === 'listTasks') return { tasks: [value], nextPageToken: '', pageSize: 50, totalSize: 1 };
  return binding === 'jsonrpc-0.3' ? value : { task: value };
}

let answer: (requestBody: string) => { body: string; contentType: string | undefined } = () => ({ body: '{}', contentType: 'application/json' });
let server: RawServer;
beforeAll(async () => {
  server = await startRawServer((request, response) => {
    const { body, contentType } = answer(request.body);
    response.writeHead(200, { ...(contentType === undefined ? {} : { 'content-type': contentType }), 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
});
afterAll(() => server.close());

function transportFor(binding: Binding): A2ATransport {
  if (binding === 'rest-1.0') return createTransport({ url: server.url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' });
  return createTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: binding === 'jsonrpc-0.3' ? '0.3' : '1.0' });
}

/** What the call returned (as JSON) or the error class it threw. */
async function outcome(binding: Binding, method: Method): Promise<unknown> {
  const agent = transportFor(binding);
  const call = method === 'getTask' ? agent.getTask({ id: 'T1' }) : method === 'listTasks' ? agent.listTasks({ contextId: 'c-ours' }) : agent.sendMessage({ message });
  return call.then(
    (value) => ({ value: JSON.parse(JSON.stringify(value)) as unknown }),
    (error: unknown) => ({ error: (error as Error).constructor.name }),
  );
}

/** Serves `result` (a JSON-RPC envelope carrying the request's id, or the REST body) under `contentType`. */
function serveJson(binding: Binding, result: unknown, contentType: string | undefined) {
  answer = (requestBody) => {
    if (binding === 'rest-1.0') return { body: JSON.stringify(result), contentType };
    const { id } = JSON.parse(requestBody) as { id: unknown };
    return { body: JSON.stringify({ jsonrpc: '2.0', id, result }), contentType };
  };
}

const labels = fc.oneof(
  fc.constantFrom('text/html; charset=utf-8', 'text/plain', 'application/octet-stream', 'text/json', 'application/x-www-form-urlencoded', undefined),
  fc.string({ maxLength: 40 }).filter((text) => !/[\r\n]/.test(text) && /^[\x20-\x7e]*$/.test(text)),
);
const bindings = fc.constantFrom<Binding>('jsonrpc-1.0', 'jsonrpc-0.3', 'rest-1.0');
const methods = fc.constantFrom<Method>('getTask', 'listTasks', 'sendMessage');

describe('a 2xx JSON answer whatever its content-type label', () => {
  it('property: any label reads the same value as application/json would (or the same refusal)', async () => {
    await fc.assert(
      fc.asyncProperty(bindings, methods, labels, async (binding, method, label) => {
        if (binding === 'jsonrpc-0.3' && method === 'listTasks') return; // 0.3 has no tasks/list
        serveJson(binding, resultOf(binding, method), 'application/json');
        const expected = await outcome(binding, method);
        expect(expected).toHaveProperty('value');
        serveJson(binding, resultOf(binding, method), label);
        expect(await outcome(binding, method)).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });

  it('property: a body that is not JSON is a ProtocolError under any label', async () => {
    const notJson = fc.constantFrom('<html><body>502 Bad Gateway</body></html>', 'OK', 'tasks: none', '{"jsonrpc":"2.0",');
    await fc.assert(
      fc.asyncProperty(bindings, methods, labels, notJson, async (binding, method, label, body) => {
        if (binding === 'jsonrpc-0.3' && method === 'listTasks') return;
        answer = () => ({ body, contentType: label });
        expect(await outcome(binding, method)).toEqual({ error: 'ProtocolError' });
      }),
      { numRuns: 60 },
    );
  });

  it('jsonBodyOf: the JSON value under any label; text that is not JSON throws a ProtocolError naming the label', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), labels, (value, label) => {
        expect(jsonBodyOf(label, JSON.stringify(value), 200, 'answer')).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 300 },
    );
    expect(() => jsonBodyOf('text/html', '<html></html>', 200, 'GetTask response')).toThrow(/^GetTask response: expected JSON, got text\/html$/);
    expect(() => jsonBodyOf('text/html', '<html></html>', 200, 'GetTask response')).toThrow(ProtocolError);
    expect(() => jsonBodyOf('application/json', '<html></html>', 200, 'GetTask response')).toThrow(ProtocolError);
  });
});
