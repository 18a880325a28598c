/**
 * Inputs of the kinds of content-coding.test.ts and envelope-framing.test.ts that those tests do not list (a red
 * team's second round): header spellings, a coding on an answer without a body, a corrupt zstd body, a coding list
 * over two header lines, envelopes in other statuses, ids in other spellings. The cases in "answers without a body
 * and other coding edges" failed on b929018 (a plain Error for zstd; a ProtocolError for an empty coded 204, 401, 429,
 * 503, losing the status's meaning and its Retry-After; only the first header line read).
 */
import type { ServerResponse } from 'node:http';
import zlib from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, AuthenticationError, ProtocolError, UpstreamError } from '../src/errors.ts';
import { createHttpClient } from '../src/http.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const message = { messageId: 'm1', role: 'ROLE_USER' as const, contextId: 'c1', parts: [{ text: 'hi' }] };
const completed = { id: 'T1', contextId: 'c1', status: { state: 'TASK_STATE_COMPLETED' }, history: [message] };
const rpcId = (body: string): unknown => (JSON.parse(body) as { id: unknown }).id;
const transport = () => createTransport({ url: server!.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
const outcomeOf = (promise: Promise<unknown>) => promise.then((value) => ({ value }), (error: unknown) => ({ error }));

function answer(response: ServerResponse, status: number, body: Buffer, headers: Record<string, string | string[]> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': String(body.length), ...headers });
  response.end(body);
}
const ourEnvelope = (id: unknown) => Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, result: { task: completed } }));

describe('content codings: header spellings', () => {
  for (const header of ['GZIP', 'gzip, identity', ' gzip ', 'Identity, GZip', 'gzip,,identity']) {
    it(`Content-Encoding ${JSON.stringify(header)} on a gzip body: read`, async () => {
      server = await startRawServer((request, response) => answer(response, 200, zlib.gzipSync(ourEnvelope(rpcId(request.body))), { 'content-encoding': header }));
      expect(await transport().sendMessage({ message })).toMatchObject({ task: { id: 'T1' } });
    });
  }
  for (const header of ['identity', '', ' ', ',']) {
    it(`Content-Encoding ${JSON.stringify(header)} on a plain body: read`, async () => {
      server = await startRawServer((request, response) => answer(response, 200, ourEnvelope(rpcId(request.body)), { 'content-encoding': header }));
      expect(await transport().sendMessage({ message })).toMatchObject({ task: { id: 'T1' } });
    });
  }
  it('gzip declared, body plain JSON: ProtocolError, delivery received', async () => {
    server = await startRawServer((request, response) => answer(response, 200, ourEnvelope(rpcId(request.body)), { 'content-encoding': 'gzip' }));
    const { error } = (await outcomeOf(transport().sendMessage({ message }))) as { error: unknown };
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ delivery: 'received' });
  });
});

describe('content codings: answers without a body and other coding edges', () => {
  it('a corrupt zstd body is a ProtocolError (delivery received), not an untyped Error', async () => {
    server = await startRawServer((request, response) => answer(response, 200, ourEnvelope(rpcId(request.body)), { 'content-encoding': 'zstd' }));
    const { error } = (await outcomeOf(transport().sendMessage({ message }))) as { error: unknown };
    expect(error).toBeInstanceOf(A2AError);
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ delivery: 'received' });
  });

  it('a 204 with Content-Encoding gzip and no body reads as an empty answer', async () => {
    server = await startRawServer((_request, response) => {
      response.writeHead(204, { 'content-encoding': 'gzip' });
      response.end();
    });
    const http = createHttpClient();
    expect(await http.request({ method: 'DELETE', url: server.url })).toMatchObject({ status: 204, bodyText: '' });
  });

  for (const [status, Class, extra] of [
    [401, AuthenticationError, {}],
    [503, UpstreamError, { 'retry-after': '7' }],
    [429, UpstreamError, { 'retry-after': '7' }],
  ] as const) {
    it(`HTTP ${status} with Content-Encoding gzip and an empty body: the status decides (${Class.name}), as without the header`, async () => {
      server = await startRawServer((_request, response) => answer(response, status, Buffer.alloc(0), { 'content-encoding': 'gzip', ...extra }));
      const { error } = (await outcomeOf(transport().sendMessage({ message }))) as { error: unknown };
      expect(error).toBeInstanceOf(Class);
    });
  }

  it('Content-Encoding sent as two header lines (gzip, then br) is the list "gzip, br" (RFC 9110 §5.3)', async () => {
    server = await startRawServer((request, response) => answer(response, 200, zlib.brotliCompressSync(zlib.gzipSync(ourEnvelope(rpcId(request.body)))), { 'content-encoding': ['gzip', 'br'] }));
    expect(await transport().sendMessage({ message })).toMatchObject({ task: { id: 'T1' } });
  });

  it('a gzip body with bytes after its end is refused (deflate, br and zstd ignore them): a ProtocolError, delivery received, never read in part', async () => {
    server = await startRawServer((request, response) => answer(response, 200, Buffer.concat([zlib.gzipSync(ourEnvelope(rpcId(request.body))), Buffer.from('\r\n\r\n')]), { 'content-encoding': 'gzip' }));
    const { error } = (await outcomeOf(transport().sendMessage({ message }))) as { error: unknown };
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ delivery: 'received' });
  });
});

describe('envelope ownership', () => {
  for (const status of [404, 409, 429]) {
    it(`HTTP ${status} whose body is our success envelope: the task`, async () => {
      server = await startRawServer((request, response) => answer(response, status, ourEnvelope(rpcId(request.body))));
      expect(await transport().sendMessage({ message })).toMatchObject({ task: { id: 'T1' } });
    });
  }
  it('our numeric id sent back as a string: the task', async () => {
    server = await startRawServer((request, response) => answer(response, 200, ourEnvelope(String(rpcId(request.body)))));
    expect(await transport().sendMessage({ message })).toMatchObject({ task: { id: 'T1' } });
  });
  it('"id": null with a result whose history holds our messageId: the task; with nothing proving it ours: an error', async () => {
    server = await startRawServer((_request, response) => answer(response, 200, ourEnvelope(null)));
    expect(await transport().sendMessage({ message })).toMatchObject({ task: { id: 'T1' } });
    await server.close();
    server = await startRawServer((_request, response) => answer(response, 200, Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: null, result: { task: { id: 'T9', contextId: 'other', status: { state: 'TASK_STATE_COMPLETED' } } } }))));
    const { error } = (await outcomeOf(transport().sendMessage({ message }))) as { error: unknown };
    expect(error).toBeInstanceOf(A2AError);
  });
  for (const status of [200, 404]) {
    it(`HTTP ${status} batch with our id twice (an error and a result): an error, delivery received, never adopted`, async () => {
      server = await startRawServer((request, response) => {
        const id = rpcId(request.body);
        answer(response, status, Buffer.from(JSON.stringify([{ jsonrpc: '2.0', id, error: { code: -32001, message: 'gone' } }, { jsonrpc: '2.0', id: String(id), result: { task: completed } }])));
      });
      const { error } = (await outcomeOf(transport().sendMessage({ message }))) as { error: unknown };
      expect(error).toBeInstanceOf(A2AError);
      expect(error).toMatchObject({ delivery: 'received' });
    });
  }
});
