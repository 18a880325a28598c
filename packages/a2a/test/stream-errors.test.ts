/** Field case R08: error shapes on streaming calls, over a real socket, both bindings. */
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidAgentResponseError, ProtocolError, TaskNotFoundError, UpstreamError, isRetryable } from '../src/errors.ts';
import { JsonRpcTransport } from '../src/jsonrpc.ts';
import { RestTransport } from '../src/rest.ts';
import type { StreamEvent } from '../src/transport.ts';
import { drainStream } from '../src/stream.ts';
import { ERR, type RawServer, SU, ev, startRawServer } from './helpers/raw-server.ts';

const message = { message: { messageId: 'M1', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] } };
let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Serves one fixed answer to every request. */
async function answer(status: number, contentType: string, body: string): Promise<RawServer> {
  server = await startRawServer((_request, response) => {
    response.writeHead(status, { 'content-type': contentType });
    response.end(body);
  });
  return server;
}

async function streamError(transport: JsonRpcTransport | RestTransport): Promise<{ error: unknown; events: StreamEvent[] }> {
  const events: StreamEvent[] = [];
  try {
    await drainStream(transport.sendStreamingMessage(message), (event) => {
      events.push(event);
    });
  } catch (error) {
    return { error, events };
  }
  throw new Error('stream ended without an error: recorded as an empty success');
}

describe('R08 JSON-RPC streaming error shapes', () => {
  const jsonRpc = (url: string) => new JsonRpcTransport({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });

  it('(a) HTTP 200 + application/json error envelope -> TaskNotFoundError -32001', async () => {
    const { url } = await answer(200, 'application/json', ERR(-32001, 'Task not found'));
    const { error, events } = await streamError(jsonRpc(url));
    expect(error).toBeInstanceOf(TaskNotFoundError);
    expect(error).toMatchObject({ jsonRpcCode: -32001, code: 'TASK_NOT_FOUND', retryable: false });
    expect(events).toHaveLength(0);
  });

  it('(b) the same error inside an SSE data: line -> the same typed error', async () => {
    const { url } = await answer(200, 'text/event-stream', ev(ERR(-32001, 'Task not found')));
    const { error } = await streamError(jsonRpc(url));
    expect(error).toBeInstanceOf(TaskNotFoundError);
    expect(error).toMatchObject({ jsonRpcCode: -32001 });
  });

  it('(b) also as `event: error` after an event', async () => {
    const { url } = await answer(200, 'text/event-stream', `${ev(SU('WORKING'))}event: error\n${ev(ERR(-32001, 'Task not found'))}`);
    const { error, events } = await streamError(jsonRpc(url));
    expect(error).toBeInstanceOf(TaskNotFoundError);
    expect(events).toHaveLength(1);
  });

  it('(c) a proxy status 502 inside the envelope -> retryable UpstreamError', async () => {
    const { url } = await answer(200, 'text/event-stream', ev(ERR(502, 'Bad Gateway')));
    const { error } = await streamError(jsonRpc(url));
    expect(error).toBeInstanceOf(UpstreamError);
    expect(isRetryable(error)).toBe(true);
  });

  it('(d) HTTP 200 text/html -> ProtocolError with the body excerpt', async () => {
    const { url } = await answer(200, 'text/html', '<html>oops</html>');
    const { error } = await streamError(jsonRpc(url));
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).bodyExcerpt).toBe('<html>oops</html>');
    expect(isRetryable(error)).toBe(false);
  });

  it('an HTML 502 page from a proxy -> retryable UpstreamError', async () => {
    const { url } = await answer(502, 'text/html', '<html><body>502 Bad Gateway</body></html>');
    const { error } = await streamError(jsonRpc(url));
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error).toMatchObject({ httpStatus: 502, retryable: true });
  });

  it('a data: line that is not a StreamResponse -> InvalidAgentResponseError', async () => {
    const { url } = await answer(200, 'text/event-stream', ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { kind: 'status-update' } })));
    const { error } = await streamError(jsonRpc(url));
    expect(error).toBeInstanceOf(InvalidAgentResponseError);
  });
});

describe('R08 HTTP+JSON streaming error shapes', () => {
  const rest = (url: string) => new RestTransport({ url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' });
  const notFound = JSON.stringify({
    error: {
      code: 404,
      status: 'NOT_FOUND',
      message: 'Task not found',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }],
    },
  });

  it('(a) a 404 JSON error before the first event -> TaskNotFoundError', async () => {
    const { url } = await answer(404, 'application/json', notFound);
    const { error } = await streamError(rest(url));
    expect(error).toBeInstanceOf(TaskNotFoundError);
    expect(error).toMatchObject({ httpStatus: 404, reason: 'TASK_NOT_FOUND' });
  });

  it('(b) `event: error` with a Status body -> the typed error', async () => {
    const { url } = await answer(200, 'text/event-stream', `event: error\n${ev(notFound)}`);
    const { error } = await streamError(rest(url));
    expect(error).toBeInstanceOf(TaskNotFoundError);
  });

  it('(d) text/html -> ProtocolError', async () => {
    const { url } = await answer(200, 'text/html', '<html>oops</html>');
    const { error } = await streamError(rest(url));
    expect(error).toBeInstanceOf(ProtocolError);
  });
});
