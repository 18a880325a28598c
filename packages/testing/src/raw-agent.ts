/**
 * A bare node:http server for byte-exact wire tests: the test writes every
 * header and byte itself (malformed SSE, odd error envelopes, 0.3 shapes...).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback, trackSockets } from './ports.ts';

export type RawAgentHandler = (request: IncomingMessage, response: ServerResponse, body: string) => void | Promise<void>;

export interface RawAgentHandle {
  readonly port: number;
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  /** Every request, in order: method, path+query, headers and the whole body. */
  readonly requests: readonly RawRequest[];
  /** Destroys open sockets (streams included) and stops listening. Safe to call twice. */
  close(): Promise<void>;
}

export interface RawRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * Starts a server on 127.0.0.1, port 0. Each request's body is read in full
 * (UTF-8) before `handler` runs. If the handler throws before answering, the
 * server answers 500 with the error message as text.
 */
export async function startRawAgent(handler: RawAgentHandler): Promise<RawAgentHandle> {
  const requests: RawRequest[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
      Promise.resolve()
        .then(() => handler(request, response, body))
        .catch((error: unknown) => {
          if (!response.headersSent) {
            response.writeHead(500, { 'content-type': 'text/plain' });
            response.end(error instanceof Error ? error.message : String(error));
          } else {
            response.destroy();
          }
        });
    });
  });
  const sockets = trackSockets(server);
  const port = await listenOnLoopback(server);
  let closed = false;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      if (closed) return;
      closed = true;
      sockets.destroyAll();
      await closeServer(server);
    },
  };
}

/** Writes status 200 and SSE headers (as the SDK sends them) and flushes them; events follow via `sseEvent`. */
export function sseHeaders(response: ServerResponse): void {
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  response.flushHeaders();
}

/** One SSE `data:` event for `payload` (JSON-encoded unless already a string), with an optional `event:` type. */
export function sseEvent(payload: unknown, eventType?: string): string {
  const data = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return `${eventType ? `event: ${eventType}\n` : ''}data: ${data}\n\n`;
}

/** A JSON-RPC 2.0 success envelope. */
export function jsonRpcResult(id: string | number | null, result: unknown): { jsonrpc: '2.0'; id: string | number | null; result: unknown } {
  return { jsonrpc: '2.0', id, result };
}

/** A JSON-RPC 2.0 error envelope; `data` (e.g. an ErrorInfo array, spec §9.5) is added when given. */
export function jsonRpcError(
  id: string | number | null,
  code: number,
  message: string,
  data?: unknown,
): { jsonrpc: '2.0'; id: string | number | null; error: { code: number; message: string; data?: unknown } } {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

/** Sends `payload` as a JSON body with `status` (default 200) and the given content type (default application/json). */
export function sendJson(response: ServerResponse, payload: unknown, status = 200, contentType = 'application/json'): void {
  const body = JSON.stringify(payload);
  response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  response.end(body);
}
