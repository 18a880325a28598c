/** What the transports put on the wire, and how they read plain (non-stream) answers. */
import { afterEach, describe, expect, it } from 'vitest';
import { apiKeyHeader, bearerToken, refreshingToken } from '../src/credentials.ts';
import { InvalidAgentResponseError, NetworkError, ProtocolError, TaskNotFoundError } from '../src/errors.ts';
import { JsonRpcTransport } from '../src/jsonrpc.ts';
import { RestTransport } from '../src/rest.ts';
import { drainStream } from '../src/stream.ts';
import { type RawServer, type RecordedRequest, SU, ev, startRawServer } from './helpers/raw-server.ts';
import type { ServerResponse } from 'node:http';

const task = { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } };
let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(handler: (request: RecordedRequest, response: ServerResponse) => void): Promise<RawServer> {
  server = await startRawServer(handler);
  return server;
}
const json = (response: ServerResponse, status: number, body: unknown, contentType = 'application/json') =>
  response.writeHead(status, { 'content-type': contentType }).end(JSON.stringify(body));

describe('JSON-RPC transport', () => {
  it('POSTs an envelope with the 1.0 method name, A2A-Version: 1.0, credentials and the tenant', async () => {
    const { url, requests } = await serve((request, response) => {
      const { id } = JSON.parse(request.body) as { id: number };
      json(response, 200, { jsonrpc: '2.0', id, result: task });
    });
    const transport = new JsonRpcTransport({ url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: 'acme' }, { credentials: bearerToken('s3cret') });
    expect(await transport.getTask({ id: 'T1', historyLength: 5 })).toEqual(task);
    const [request] = requests;
    expect(request).toMatchObject({ method: 'POST', url: '/rpc' });
    expect(request!.headers).toMatchObject({ 'a2a-version': '1.0', 'content-type': 'application/json', authorization: 'Bearer s3cret' });
    expect(JSON.parse(request!.body)).toMatchObject({ jsonrpc: '2.0', method: 'GetTask', params: { id: 'T1', historyLength: 5, tenant: 'acme' } });
  });

  it('a JSON-RPC error with HTTP 200 is an error, never an empty success', async () => {
    const { url } = await serve((_request, response) => json(response, 200, { jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'Task not found' } }));
    const transport = new JsonRpcTransport({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    await expect(transport.cancelTask({ id: 'T1' })).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it('a result that does not match the schema -> InvalidAgentResponseError; no result -> the same; HTML -> ProtocolError; our JSON labelled text/html -> read', async () => {
    let answer: unknown = { jsonrpc: '2.0', id: 1, result: { id: 'T1' } };
    let contentType = 'application/json';
    let html = false;
    const { url } = await serve((request, response) => {
      if (html) return void response.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>');
      const { id } = JSON.parse(request.body) as { id: number };
      json(response, 200, answer === 'ours' ? { jsonrpc: '2.0', id, result: task } : answer, contentType);
    });
    const transport = new JsonRpcTransport({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    await expect(transport.getTask({ id: 'T1' })).rejects.toBeInstanceOf(InvalidAgentResponseError);
    answer = { jsonrpc: '2.0', id: 2 }; // the second request's id
    await expect(transport.getTask({ id: 'T1' })).rejects.toBeInstanceOf(InvalidAgentResponseError);
    html = true;
    await expect(transport.getTask({ id: 'T1' })).rejects.toBeInstanceOf(ProtocolError);
    // A label is weak evidence (attack 30): our envelope, labelled text/html by the agent's framework, is the answer.
    html = false;
    answer = 'ours';
    contentType = 'text/html; charset=utf-8';
    await expect(transport.getTask({ id: 'T1' })).resolves.toMatchObject({ id: task.id });
  });

  it('connection refused -> retryable NetworkError; a slow agent -> NetworkError after requestTimeoutMs', async () => {
    const { url } = await serve(() => undefined); // never answers
    const slow = new JsonRpcTransport({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, { requestTimeoutMs: 200 });
    await expect(slow.getTask({ id: 'T1' })).rejects.toBeInstanceOf(NetworkError);
    await server!.close();
    server = undefined;
    const refused = new JsonRpcTransport({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    await expect(refused.getTask({ id: 'T1' })).rejects.toMatchObject({ code: 'NETWORK_ERROR', retryable: true });
  });
});

describe('HTTP+JSON transport', () => {
  it('uses the 1.0 paths, application/a2a+json, camelCase query and the /{tenant} prefix', async () => {
    const { url, requests } = await serve((request, response) => {
      if (request.url.startsWith('/api/acme/tasks?')) json(response, 200, { tasks: [task], nextPageToken: '', pageSize: 50, totalSize: 1 }, 'application/a2a+json');
      else if (request.url.endsWith('/pushNotificationConfigs')) json(response, 201, { id: 'P1', taskId: 'T1', url: 'https://hook.example/' });
      else if (request.method === 'DELETE') response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else json(response, 200, request.url.includes('message:send') ? { task } : task, 'application/a2a+json');
    });
    const transport = new RestTransport({ url: `${url}/api/`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: 'acme' }, { credentials: apiKeyHeader('X-API-Key', 'k') });
    await transport.sendMessage({ message: { messageId: 'M1', role: 'ROLE_USER', parts: [{ text: 'hi' }] }, configuration: { returnImmediately: true } });
    await transport.getTask({ id: 'T 1', historyLength: 0 });
    const list = await transport.listTasks({ contextId: 'C1', status: 'TASK_STATE_WORKING', statusTimestampAfter: '2025-11-09T10:30:00Z', includeArtifacts: true });
    expect(list.tasks).toHaveLength(1);
    await transport.cancelTask({ id: 'T1' });
    await transport.createTaskPushNotificationConfig({ taskId: 'T1', url: 'https://hook.example/' });
    await transport.deleteTaskPushNotificationConfig({ taskId: 'T1', id: 'P1' });
    expect(requests.map((request) => `${request.method} ${request.url}`)).toEqual([
      'POST /api/acme/message:send',
      'GET /api/acme/tasks/T%201?historyLength=0',
      'GET /api/acme/tasks?contextId=C1&status=TASK_STATE_WORKING&statusTimestampAfter=2025-11-09T10%3A30%3A00Z&includeArtifacts=true',
      'POST /api/acme/tasks/T1:cancel',
      'POST /api/acme/tasks/T1/pushNotificationConfigs',
      'DELETE /api/acme/tasks/T1/pushNotificationConfigs/P1',
    ]);
    expect(requests[0]!.headers).toMatchObject({ 'content-type': 'application/a2a+json', 'a2a-version': '1.0', 'x-api-key': 'k' });
    expect(requests[3]!.body).toBe('{}');
  });

  it('SubscribeToTask sends POST and falls back to GET on 405 (and on a route 404 without ErrorInfo)', async () => {
    for (const refusal of [405, 404]) {
      const { url, requests } = await serve((request, response) => {
        if (request.method === 'POST') response.writeHead(refusal, { 'content-type': 'text/html' }).end('Cannot POST');
        else response.writeHead(200, { 'content-type': 'text/event-stream' }).end(ev(JSON.stringify({ task: { ...task, status: { state: 'TASK_STATE_COMPLETED' } } })));
      });
      const transport = new RestTransport({ url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' });
      const end = await drainStream(transport.subscribeToTask({ id: 'T1' }), () => undefined);
      expect(end.kind).toBe('terminal');
      expect(requests.map((request) => `${request.method} ${request.url}`)).toEqual(['POST /tasks/T1:subscribe', 'GET /tasks/T1:subscribe']);
      await server!.close();
      server = undefined;
    }
  });

  it('SubscribeToTask does not fall back on an A2A TaskNotFound 404', async () => {
    const { url, requests } = await serve((_request, response) =>
      json(response, 404, { error: { code: 404, status: 'NOT_FOUND', message: 'no', details: [{ reason: 'TASK_NOT_FOUND' }] } }),
    );
    const transport = new RestTransport({ url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' });
    await expect(drainStream(transport.subscribeToTask({ id: 'T1' }), () => undefined)).rejects.toBeInstanceOf(TaskNotFoundError);
    expect(requests).toHaveLength(1);
  });

  it('stream events are bare StreamResponse objects', async () => {
    const { url } = await serve((_request, response) => {
      const update = JSON.parse(SU('COMPLETED')) as { result: unknown };
      response.writeHead(200, { 'content-type': 'text/event-stream' }).end(ev(JSON.stringify(update.result)));
    });
    const transport = new RestTransport({ url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' });
    const end = await drainStream(transport.sendStreamingMessage({ message: { messageId: 'M1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } }), () => undefined);
    expect(end).toEqual({ kind: 'terminal', lastState: 'TASK_STATE_COMPLETED', eventCount: 1 });
  });
});

describe('credentials', () => {
  it('refreshingToken caches until the expiry minus the margin and shares one fetch', async () => {
    let nowMs = 1_000_000;
    let fetches = 0;
    const provider = refreshingToken(async () => ({ token: `t${++fetches}`, expiresAtMs: nowMs + 60_000 }), { refreshMarginMs: 10_000, now: () => nowMs });
    const [a, b] = await Promise.all([provider(), provider()]);
    expect(a).toEqual({ authorization: 'Bearer t1' });
    expect(b).toEqual(a);
    nowMs += 49_000;
    expect(await provider()).toEqual({ authorization: 'Bearer t1' });
    nowMs += 2_000;
    expect(await provider()).toEqual({ authorization: 'Bearer t2' });
    expect(fetches).toBe(2);
  });
});
