/**
 * A raw node:http A2A 1.0 JSON-RPC agent whose methods are scripted per test
 * (the end-to-end field case tests; docs/field-cases.md names each). The card at
 * /.well-known/agent-card.json names one JSONRPC interface at /a2a/jsonrpc
 * (protocolVersion 1.0, streaming true). Every JSON-RPC request is recorded
 * (method, params, request id, time) so tests can count calls and inspect
 * request bodies.
 *
 * Helpers follow the conventions of /work/shared/cases/field-reports.md:
 * `SU`, `AU`, `ev`, `task`, `ERR`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback, trackSockets } from './ports.ts';

export type ScriptedMethod = 'SendMessage' | 'SendStreamingMessage' | 'GetTask' | 'ListTasks' | 'SubscribeToTask' | 'CancelTask';

/** A wait inside an SSE script: `{ waitMs }` pauses before the next chunk; `{ until }` waits for the promise (an event of the test). */
export type SseWait = { waitMs: number } | { until: Promise<unknown> };

export type ScriptedAnswer =
  /** JSON-RPC success with this `result`; `envelopeId` replaces the request's id in the envelope (`null`: A33). */
  | { result: unknown; envelopeId?: unknown }
  /** JSON-RPC error envelope (HTTP 200, application/json). */
  | { error: { code: number; message: string; data?: unknown } }
  /**
   * 200 text/event-stream, then the raw chunks (strings written as-is; `{waitMs}` pauses),
   * then: 'close' (FIN, default), 'destroy' (RST-like socket destroy) or 'hang' (keep open until the agent closes).
   */
  | { sse: string | (string | SseWait)[]; endAfter?: 'close' | 'destroy' | 'hang' }
  /** Never answer (the client's request timeout decides). The socket is destroyed on `close()`. */
  | { hang: true }
  /** A plain HTTP answer: this status, body (text, or exact bytes: a compressed body) and headers (default content-type application/json). */
  | { http: { status: number; body: string | Buffer; headers?: Record<string, string> } }
  /** These bytes on the socket as they are, no HTTP framing of ours (a malformed or hand-made response), then the socket ended. */
  | { raw: string };

export interface ScriptedCall {
  /** 1-based count of calls of this method so far, this one included. */
  count: number;
  /** The JSON-RPC request id. */
  id: unknown;
  /** The request's HTTP headers (e.g. `authorization`). */
  headers: IncomingMessage['headers'];
}

export type ScriptedHandler = (params: any, call: ScriptedCall) => ScriptedAnswer | Promise<ScriptedAnswer>;
export type ScriptedHandlers = Partial<Record<ScriptedMethod, ScriptedHandler>>;

export interface ScriptedRequest {
  method: string;
  params: any;
  id: unknown;
  /** Raw body as received. */
  body: string;
  headers: IncomingMessage['headers'];
  at: number;
}

export interface ScriptedAgentHandle {
  readonly url: string;
  readonly cardUrl: string;
  readonly rpcUrl: string;
  /** Every JSON-RPC request, in arrival order. */
  readonly requests: readonly ScriptedRequest[];
  /** Requests of one method. */
  calls(method: ScriptedMethod | string): ScriptedRequest[];
  /** Number of requests of one method. */
  count(method: ScriptedMethod | string): number;
  /** Replaces (or adds) handlers; counts are kept. */
  script(handlers: ScriptedHandlers): void;
  /** Requests of `method` (every method without one) whose connection is still open: not answered in full, or a stream not ended. */
  openRequests(method?: ScriptedMethod | string): number;
  /** Destroys open sockets (hanging streams included) and stops listening. Safe to call twice. */
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts a scripted agent on 127.0.0.1, port 0. Unscripted methods answer -32601. */
export async function startScriptedAgent(initial: ScriptedHandlers): Promise<ScriptedAgentHandle> {
  let handlers: ScriptedHandlers = { ...initial };
  const requests: ScriptedRequest[] = [];
  const counts = new Map<string, number>();
  let closed = false;
  let baseUrl = '';

  const card = () => ({
    name: 'Scripted agent',
    description: 'A raw JSON-RPC agent whose answers are scripted per test',
    version: '1.0.0',
    supportedInterfaces: [{ url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'scripted', name: 'Scripted', description: 'Does what the test scripted', tags: ['scripted'] }],
  });

  const json = (response: ServerResponse, payload: unknown, status = 200) => {
    const body = JSON.stringify(payload);
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  };

  const answer = async (response: ServerResponse, id: unknown, reply: ScriptedAnswer) => {
    if ('hang' in reply) return; // never answered; close() destroys the socket
    if ('raw' in reply) return void response.socket?.end(reply.raw);
    if ('http' in reply) {
      response.writeHead(reply.http.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply.http.body), ...reply.http.headers });
      return response.end(reply.http.body);
    }
    if ('result' in reply) return json(response, { jsonrpc: '2.0', id: 'envelopeId' in reply ? reply.envelopeId : id, result: reply.result });
    if ('error' in reply) return json(response, { jsonrpc: '2.0', id, error: reply.error });
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    response.flushHeaders();
    const chunks = typeof reply.sse === 'string' ? [reply.sse] : reply.sse;
    for (const chunk of chunks) {
      if (closed || response.destroyed) return;
      if (typeof chunk === 'string') {
        // Wait until the chunk is handed to the socket, so a later 'destroy' never swallows it.
        // Frames are written with `"id":1`; a JSON-RPC answer carries the request's id (the client checks it).
        const framed = chunk.replaceAll('"jsonrpc":"2.0","id":1,', `"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)},`);
        if (framed.length > 0) await new Promise<void>((resolve) => response.write(framed, () => resolve()));
      } else if ('until' in chunk) await chunk.until;
      else await sleep(chunk.waitMs);
    }
    if (closed || response.destroyed) return;
    const endAfter = reply.endAfter ?? 'close';
    if (endAfter === 'close') response.end();
    else if (endAfter === 'destroy') {
      // Let the client read what was written, then cut the connection without the chunked terminator.
      await sleep(50);
      response.destroy();
    }
    // 'hang': leave it open
  };

  const open = new Map<string, number>();
  const server = createServer((request, response) => {
    let method: string | undefined;
    response.on('close', () => void (method !== undefined && open.set(method, open.get(method)! - 1)));
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (request.url ?? '').split('?')[0];
      if (request.method === 'GET' && path === '/.well-known/agent-card.json') return json(response, card());
      if (request.method !== 'POST' || path !== '/a2a/jsonrpc') {
        response.writeHead(404, { 'content-type': 'text/plain' });
        return response.end('not found');
      }
      let envelope: { id?: unknown; method?: string; params?: unknown };
      try {
        envelope = JSON.parse(body);
      } catch {
        return json(response, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      }
      method = String(envelope.method);
      if (!response.destroyed) open.set(method, (open.get(method) ?? 0) + 1);
      requests.push({ method, params: envelope.params, id: envelope.id, body, headers: request.headers, at: Date.now() });
      const count = (counts.get(method) ?? 0) + 1;
      counts.set(method, count);
      const handler = handlers[method as ScriptedMethod];
      Promise.resolve()
        .then(() => (handler ? handler(envelope.params ?? {}, { count, id: envelope.id, headers: request.headers }) : { error: { code: -32601, message: `Method not found: ${method}` } }))
        .then((reply) => answer(response, envelope.id ?? null, reply))
        .catch((error: unknown) => {
          if (!response.headersSent) json(response, { jsonrpc: '2.0', id: envelope.id ?? null, error: { code: -32603, message: String(error) } });
          else response.destroy();
        });
    });
  });
  const sockets = trackSockets(server);
  const port = await listenOnLoopback(server);
  baseUrl = `http://127.0.0.1:${port}`;
  return {
    url: baseUrl,
    cardUrl: `${baseUrl}/.well-known/agent-card.json`,
    rpcUrl: `${baseUrl}/a2a/jsonrpc`,
    requests,
    calls: (method) => requests.filter((entry) => entry.method === method),
    count: (method) => requests.filter((entry) => entry.method === method).length,
    openRequests: (method) => (method === undefined ? [...open.values()].reduce((sum, value) => sum + value, 0) : (open.get(method) ?? 0)),
    script(next) {
      handlers = { ...handlers, ...next };
    },
    async close() {
      if (closed) return;
      closed = true;
      sockets.destroyAll();
      await closeServer(server);
    },
  };
}

// ---------------------------------------------------------------------------
// Wire helpers (field-report conventions). States are given without the
// TASK_STATE_ prefix: 'WORKING', 'COMPLETED', ...

export type ShortState = 'SUBMITTED' | 'WORKING' | 'COMPLETED' | 'FAILED' | 'CANCELED' | 'REJECTED' | 'INPUT_REQUIRED' | 'AUTH_REQUIRED';

export const wireState = (state: ShortState | string) => (state.startsWith('TASK_STATE_') ? state : `TASK_STATE_${state}`);

export interface IdsOptions {
  taskId?: string;
  contextId?: string;
  /** ISO 8601 status timestamp. */
  timestamp?: string;
  /** Status message (e.g. an INPUT_REQUIRED question). */
  message?: unknown;
}

/** `SU(S)`: a JSON-RPC envelope (as a JSON string) carrying one statusUpdate. */
export function SU(state: ShortState | string, options: IdsOptions = {}): string {
  const status: Record<string, unknown> = { state: wireState(state) };
  if (options.timestamp) status.timestamp = options.timestamp;
  if (options.message) status.message = options.message;
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    result: { statusUpdate: { taskId: options.taskId ?? 'T1', contextId: options.contextId ?? 'C1', status } },
  });
}

/** `AU(id, append, lastChunk, text)`: a JSON-RPC envelope (as a JSON string) carrying one artifactUpdate. */
export function AU(artifactId: string, append: boolean, lastChunk: boolean, text: string, options: IdsOptions = {}): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    result: {
      artifactUpdate: {
        taskId: options.taskId ?? 'T1',
        contextId: options.contextId ?? 'C1',
        artifact: { artifactId, parts: [{ text }] },
        append,
        lastChunk,
      },
    },
  });
}

/** `ERR(c, "m")` as a JSON string. */
export function ERR(code: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code, message } });
}

/** `ev(x)`: the bytes `"data: " + x + "\n\n"`. */
export const ev = (payload: string): string => `data: ${payload}\n\n`;

export interface TaskOptions {
  contextId?: string;
  history?: unknown[];
  /** `{artifactId: text}` or full Artifact objects. */
  artifacts?: Record<string, string> | unknown[];
  timestamp?: string;
  message?: unknown;
}

/** A Task object (the `result` of GetTask, or inside `{task}`). */
export function task(id: string, state: ShortState | string, options: TaskOptions = {}): Record<string, unknown> {
  const status: Record<string, unknown> = { state: wireState(state) };
  if (options.timestamp) status.timestamp = options.timestamp;
  if (options.message) status.message = options.message;
  const value: Record<string, unknown> = { id, contextId: options.contextId ?? 'C1', status };
  if (options.history) value.history = options.history;
  if (options.artifacts) {
    value.artifacts = Array.isArray(options.artifacts)
      ? options.artifacts
      : Object.entries(options.artifacts).map(([artifactId, text]) => ({ artifactId, parts: [{ text }] }));
  }
  return value;
}

/**
 * A live stream's events after its first ones: `beat` (an SSE event or a keep-alive comment) every `everyMs`, for
 * about 5 minutes at most (the stream outlives any bound a test waits for; end it with `endAfter: 'hang'`).
 */
export function liveStream(everyMs: number, beat: string): (string | SseWait)[] {
  const beats = Math.ceil(300_000 / everyMs);
  return Array.from({ length: beats }, (): (string | SseWait)[] => [{ waitMs: everyMs }, beat]).flat();
}

/** `ev` of a `{task}` StreamResponse (the first event of a subscription). */
export function taskEvent(value: Record<string, unknown>): string {
  return ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: value } }));
}

/** An agent message (role ROLE_AGENT). */
export function agentMessage(text: string, options: { messageId?: string; taskId?: string; contextId?: string } = {}) {
  return {
    messageId: options.messageId ?? `agent-${Math.random().toString(36).slice(2)}`,
    role: 'ROLE_AGENT',
    parts: [{ text }],
    ...(options.taskId ? { taskId: options.taskId } : {}),
    ...(options.contextId ? { contextId: options.contextId } : {}),
  };
}

/** A user message echoing ours (as an agent would keep it in history). */
export function userMessage(messageId: string, text = 'request') {
  return { messageId, role: 'ROLE_USER', parts: [{ text }] };
}

/**
 * Handlers of an agent whose every SendMessage answers task `taskId` COMPLETED (the message's contextId, the message
 * as its history, one artifact `a1` holding `text`) and whose GetTask reads that task back (context C1, no history).
 */
export function completesTask(taskId: string, text: string): ScriptedHandlers {
  return {
    SendMessage: (params) => ({ result: { task: task(taskId, 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: text } }) } }),
    GetTask: () => ({ result: task(taskId, 'COMPLETED', { artifacts: { a1: text } }) }),
  };
}
