/** The 0.3 adapter's edges: wire conversions both ways, error codes, stream end, push bodies, registration. */
import type { ServerResponse } from 'node:http';
import { ProtocolError } from '../src/errors.ts';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AgentCardError,
  ExtendedAgentCardNotConfiguredError,
  InternalAgentError,
  InvalidAgentResponseError,
  InvalidParamsError,
  PushNotificationNotSupportedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  createTransport,
  drainStream,
  normalizeAgentCard,
  normalizePushBody,
  selectInterface,
} from '../src/index.ts';
import { JsonRpcV03Transport, errorFromJsonRpcV03 } from '../src/v03/jsonrpc.ts';
import { RestV03Transport, errorFromHttpV03 } from '../src/v03/rest.ts';
import { ProtoStreamResponseSchema, protoSendRequest } from '../src/v03/rest-wire.ts';
import { eventFromV03, EventV03Schema, messageToV03, partFromV03, partToV03, sendParamsToV03, stateFromV03, stateToV03, TASK_STATES_V03 } from '../src/v03/wire.ts';
import { type RawServer, type RecordedRequest, startRawServer } from './helpers/raw-server.ts';

let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});
async function serve(handler: (request: RecordedRequest, response: ServerResponse) => void): Promise<RawServer> {
  server = await startRawServer(handler);
  return server;
}
const json = (response: ServerResponse, status: number, body: unknown) =>
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
const v03Interface = (url: string, binding = 'JSONRPC') => ({ url, protocolBinding: binding, protocolVersion: '0.3' });

describe('0.3 ↔ 1.0 conversions', () => {
  it('parts: text, file uri / bytes with mimeType and name, data', () => {
    expect(partFromV03({ kind: 'text', text: 'hi' })).toEqual({ text: 'hi' });
    expect(partFromV03({ kind: 'file', file: { uri: 'https://x/a.pdf', mimeType: 'application/pdf', name: 'a.pdf' } })).toEqual({ url: 'https://x/a.pdf', mediaType: 'application/pdf', filename: 'a.pdf' });
    expect(partFromV03({ kind: 'file', file: { bytes: 'AAE=', mimeType: 'image/png' } })).toEqual({ raw: 'AAE=', mediaType: 'image/png' });
    expect(partFromV03({ kind: 'data', data: { a: 1 } })).toEqual({ data: { a: 1 } });
    expect(partToV03({ url: 'https://x/a.pdf', mediaType: 'application/pdf', filename: 'a.pdf' })).toEqual({ kind: 'file', file: { uri: 'https://x/a.pdf', mimeType: 'application/pdf', name: 'a.pdf' } });
    expect(partToV03({ raw: 'AAE=' })).toEqual({ kind: 'file', file: { bytes: 'AAE=' } });
    expect(partToV03({ data: { a: 1 } })).toEqual({ kind: 'data', data: { a: 1 } });
    expect(() => partToV03({ data: [1, 2] })).toThrow(InvalidParamsError);
  });

  it('states map one to one; unknown is UNSPECIFIED', () => {
    for (const state of TASK_STATES_V03) expect(stateToV03(stateFromV03(state))).toBe(state);
    expect(stateFromV03('input-required')).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(stateFromV03('unknown')).toBe('TASK_STATE_UNSPECIFIED');
  });

  it('an outgoing message gets kind:"message" and a lower-case role; send params carry blocking = !returnImmediately', () => {
    const message = { messageId: 'm1', role: 'ROLE_USER' as const, taskId: 't1', parts: [{ text: 'hi' }] };
    expect(messageToV03(message)).toEqual({ kind: 'message', messageId: 'm1', role: 'user', taskId: 't1', parts: [{ kind: 'text', text: 'hi' }] });
    const params = sendParamsToV03({ message, configuration: { returnImmediately: true, taskPushNotificationConfig: { url: 'http://hook', token: 't', authentication: { scheme: 'Bearer' } } } });
    expect(params.configuration).toEqual({ blocking: false, pushNotificationConfig: { url: 'http://hook', token: 't', authentication: { schemes: ['Bearer'] } } });
    expect(sendParamsToV03({ message }).configuration).toEqual({ blocking: true });
    expect(protoSendRequest({ message }).message).toEqual({ messageId: 'm1', role: 'ROLE_USER', taskId: 't1', content: [{ text: 'hi' }] });
  });

  it('events by kind; final is dropped from the 1.0 event', () => {
    const update = EventV03Schema.parse({ kind: 'status-update', taskId: 't', contextId: 'c', final: true, status: { state: 'completed', message: { kind: 'message', messageId: 'a', role: 'agent', parts: [{ kind: 'text', text: 'ok' }] } } });
    expect(eventFromV03(update)).toEqual({ statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED', message: { messageId: 'a', role: 'ROLE_AGENT', parts: [{ text: 'ok' }] } } } });
    const artifact = EventV03Schema.parse({ kind: 'artifact-update', taskId: 't', artifact: { artifactId: 'r', parts: [{ kind: 'data', data: { x: 1 } }] }, append: true });
    expect(eventFromV03(artifact)).toEqual({ artifactUpdate: { taskId: 't', artifact: { artifactId: 'r', parts: [{ data: { x: 1 } }] }, append: true } });
  });

  it('0.3 ProtoJSON (REST): CANCELLED, content, update, msg', () => {
    const parsed = ProtoStreamResponseSchema.parse({ statusUpdate: { taskId: 't', final: true, status: { state: 'TASK_STATE_CANCELLED', update: { messageId: 'a', role: 'ROLE_AGENT', content: [{ file: { fileWithUri: 'u', mimeType: 'text/plain' } }] } } } });
    expect(parsed).toEqual({ final: true, response: { statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_CANCELED', message: { messageId: 'a', role: 'ROLE_AGENT', parts: [{ url: 'u', mediaType: 'text/plain' }] } } } } });
    expect(ProtoStreamResponseSchema.parse({ msg: { messageId: 'm', role: 'ROLE_AGENT', content: [{ data: { data: { a: 1 } } }] } }).response).toEqual({ message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ data: { a: 1 } }] } });
  });
});

describe('0.3 errors', () => {
  it('codes -32001..-32007 map onto the 1.0 classes; free-form data never decides', () => {
    const cases = [
      [-32001, TaskNotFoundError], [-32002, TaskNotCancelableError], [-32003, PushNotificationNotSupportedError],
      [-32004, UnsupportedOperationError], [-32006, InvalidAgentResponseError], [-32007, ExtendedAgentCardNotConfiguredError],
    ] as const;
    for (const [code, errorClass] of cases) {
      expect(errorFromJsonRpcV03({ code, message: 'x', data: { reason: 'TASK_NOT_FOUND', anything: true } }, '{}')).toBeInstanceOf(errorClass);
    }
    // An implementation-defined server error whose data happens to look like an ErrorInfo.
    expect(errorFromJsonRpcV03({ code: -32050, message: 'x', data: { reason: 'TASK_NOT_FOUND' } }, '{}')).toBeInstanceOf(InternalAgentError);
  });

  it('REST: a bare {code, message} body with its HTTP status', () => {
    const error = errorFromHttpV03(404, 'application/json', JSON.stringify({ code: -32001, message: 'Task not found: t' }));
    expect(error).toBeInstanceOf(TaskNotFoundError);
    expect(error.httpStatus).toBe(404);
  });

  it('JSON-RPC over the wire: method names, A2A-Version: 0.3, typed errors', async () => {
    const { url, requests } = await serve((request, response) => {
      const { id } = JSON.parse(request.body) as { id: number };
      json(response, 200, { jsonrpc: '2.0', id, error: { code: -32001, message: 'Task not found', data: { taskId: 't' } } });
    });
    const transport = new JsonRpcV03Transport(v03Interface(url));
    await expect(transport.getTask({ id: 't' })).rejects.toBeInstanceOf(TaskNotFoundError);
    expect(requests[0]!.headers['a2a-version']).toBe('0.3');
    expect(JSON.parse(requests[0]!.body)).toMatchObject({ method: 'tasks/get', params: { id: 't' } });
    await expect(transport.listTasks({})).rejects.toBeInstanceOf(UnsupportedOperationError);
    expect(requests).toHaveLength(1);
  });
});

describe('0.3 streams', () => {
  it('a status update with final:true ends the stream even if the server keeps it open', async () => {
    const { url } = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (result: unknown) => response.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result })}\n\n`);
      send({ kind: 'task', id: 't', contextId: 'c', status: { state: 'submitted' } });
      send({ kind: 'status-update', taskId: 't', contextId: 'c', status: { state: 'input-required' }, final: true });
      // Never ends the response.
    });
    const transport = new JsonRpcV03Transport(v03Interface(url));
    const states: string[] = [];
    const end = await drainStream(transport.subscribeToTask({ id: 't' }), ({ response }) => {
      if ('task' in response) states.push(response.task.status.state);
      if ('statusUpdate' in response) states.push(response.statusUpdate.status.state);
    });
    expect(states).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_INPUT_REQUIRED']);
    expect(end).toEqual({ kind: 'interrupted', lastState: 'TASK_STATE_INPUT_REQUIRED', eventCount: 2 });
  });

  it('REST streams use the /v1 routes and ProtoJSON events', async () => {
    const { url, requests } = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`data: ${JSON.stringify({ task: { id: 't', status: { state: 'TASK_STATE_WORKING' } } })}\n\n`);
      response.end(`data: ${JSON.stringify({ statusUpdate: { taskId: 't', final: true, status: { state: 'TASK_STATE_COMPLETED' } } })}\n\n`);
    });
    const transport = new RestV03Transport(v03Interface(`${url}/a2a/rest/`, 'HTTP+JSON'));
    const end = await drainStream(transport.subscribeToTask({ id: 't' }), () => undefined);
    expect(end).toMatchObject({ kind: 'terminal', lastState: 'TASK_STATE_COMPLETED' });
    expect(requests[0]).toMatchObject({ method: 'POST', url: '/a2a/rest/v1/tasks/t:subscribe' });
  });
});

describe('normalizePushBody', () => {
  it('passes a 1.0 StreamResponse through', () => {
    const body = { statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_WORKING' } } };
    expect(normalizePushBody(body)).toEqual(body);
  });

  it('converts a 0.3 Task (kind:"task"), status update and artifact update', () => {
    expect(normalizePushBody({ kind: 'task', id: 't', contextId: 'c', status: { state: 'completed' }, artifacts: [{ artifactId: 'r', parts: [{ kind: 'text', text: 'x' }] }] }))
      .toEqual({ task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'r', parts: [{ text: 'x' }] }] } });
    expect(normalizePushBody({ kind: 'status-update', taskId: 't', contextId: 'c', final: true, status: { state: 'failed' } }))
      .toEqual({ statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_FAILED' } } });
    expect(normalizePushBody({ kind: 'artifact-update', taskId: 't', artifact: { artifactId: 'r', parts: [] } }))
      .toEqual({ artifactUpdate: { taskId: 't', artifact: { artifactId: 'r', parts: [] } } });
  });

  it('reads a 1.0 spelling inside a 0.3 body (R26); rejects anything else', () => {
    expect(normalizePushBody({ kind: 'task', id: 't', status: { state: 'TASK_STATE_COMPLETED' } })).toEqual({ task: { id: 't', status: { state: 'TASK_STATE_COMPLETED' } } });
    expect(() => normalizePushBody({ kind: 'task', id: 't', status: { state: 'DONE-ISH' } })).toThrow(ProtocolError);
    expect(() => normalizePushBody({ hello: 1 })).toThrow(InvalidAgentResponseError);
    expect(() => normalizePushBody('x')).toThrow(InvalidAgentResponseError);
  });
});

describe('registration and selection', () => {
  it('the 0.3 transports are registered when the a2a index is imported, and selectInterface picks 0.3', () => {
    const card = normalizeAgentCard({ name: 'old', url: 'http://a/rpc', preferredTransport: 'JSONRPC', protocolVersion: '0.3.0', additionalInterfaces: [{ url: 'http://a/rest', transport: 'HTTP+JSON' }] });
    const chosen = selectInterface(card)!;
    expect(chosen).toEqual({ url: 'http://a/rpc', protocolBinding: 'JSONRPC', protocolVersion: '0.3' });
    expect(createTransport(chosen)).toBeInstanceOf(JsonRpcV03Transport);
    expect(createTransport(selectInterface(card, { bindings: ['HTTP+JSON'] })!)).toBeInstanceOf(RestV03Transport);
    expect(() => normalizeAgentCard({ name: 'x', url: '' })).toThrow(AgentCardError);
  });
});
