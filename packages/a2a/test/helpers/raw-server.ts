/** Byte-exact test servers on node:http, port 0, closed by the caller. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a test server saw. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface RawServer {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Starts a server whose handler writes raw bytes; every request is recorded with its body. */
export async function startRawServer(
  handler: (request: RecordedRequest, response: ServerResponse) => void | Promise<void>,
): Promise<RawServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const recorded = { method: incoming.method ?? '', url: incoming.url ?? '', headers: incoming.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(recorded);
      void handler(recorded, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The JSON-RPC request id a recorded request carried (`null` when the body is not JSON or names none), for answers that echo it. */
export function requestIdOf(request: RecordedRequest): unknown {
  try {
    return (JSON.parse(request.body) as { id?: unknown }).id ?? null;
  } catch {
    return null;
  }
}

/**
 * A server answering each JSON-RPC request with `answer(its request id)` (as JSON): for answers that echo, or pointedly
 * do not echo, our request id. `answer` is read per request, so a test may swap it between calls.
 */
export function startEchoServer(answer: () => (id: unknown) => { status: number; body: string }): Promise<RawServer> {
  return startRawServer((request, response) => {
    const { status, body } = answer()(requestIdOf(request));
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
}

/** Field-report shorthands (cases/field-reports.md "Conventions"). */
export const SU = (state: string): string =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, result: { statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: `TASK_STATE_${state}` } } } });
export const AU = (id: string, append: boolean, lastChunk: boolean, text: string): string =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, result: { artifactUpdate: { taskId: 'T1', contextId: 'C1', artifact: { artifactId: id, parts: [{ text }] }, append, lastChunk } } });
export const ERR = (code: number, message: string): string => JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code, message } });
export const ev = (data: string): string => `data: ${data}\n\n`;

/** An async iterable over fixed chunks, like an undici body. */
export function bodyOf(chunks: Uint8Array[]): AsyncIterable<Uint8Array> & { destroy: () => void } {
  return {
    async *[Symbol.asyncIterator]() {
      for (const chunk of chunks) yield chunk;
    },
    destroy: () => undefined,
  };
}

export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
