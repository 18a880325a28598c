/**
 * A stream asked for with `ownConnection` (a task taken up again: a fresh worker reattaches thousands at once) runs on
 * a connection of its own, through the policy dispatcher's address check, and that connection closes with the stream:
 * the dispatcher's pool holds none of these streams, so its per-request look for a free connection does not grow with
 * them (undici's Pool scans every busy connection of the origin for each request: quadratic over a reattach burst).
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { BlockedAddressError, createPolicyDispatcher } from '../src/address-policy.ts';
import { JsonRpcTransport } from '../src/jsonrpc.ts';
import type { CallOptions } from '../src/transport.ts';
import { SU, ev } from './helpers/raw-server.ts';

interface StreamServer {
  url: string;
  /** Sockets the server holds open now. */
  open: Set<Socket>;
  /** Sockets it accepted so far. */
  accepted: number;
  /** Ends every stream response it holds (a finished status, then the end). */
  endStreams(): void;
  close(): Promise<void>;
}

const servers: Server[] = [];
const dispatchers: Dispatcher[] = [];
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((dispatcher) => dispatcher.destroy()));
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())))));
});

/** A JSON-RPC server whose SubscribeToTask answers a WORKING status and holds the stream until `endStreams()`. */
async function startStreamServer(): Promise<StreamServer> {
  const held: ServerResponse[] = [];
  const open = new Set<Socket>();
  const state = { accepted: 0 };
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.write(ev(SU('WORKING')));
      held.push(response);
    });
  });
  server.on('connection', (socket: Socket) => {
    state.accepted++;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    open,
    get accepted() {
      return state.accepted;
    },
    endStreams() {
      for (const response of held.splice(0)) response.end(ev(SU('COMPLETED')));
    },
    close: async () => undefined,
  };
}

/** Opens a SubscribeToTask stream and reads its first event; the rest of the stream is read by the returned promise. */
async function openStream(url: string, dispatcher: Dispatcher, options: CallOptions): Promise<{ rest: Promise<string[]> }> {
  const transport = new JsonRpcTransport({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, { dispatcher, idleTimeoutMs: 60_000 });
  const events = transport.subscribeToTask({ id: 'T1' }, options)[Symbol.asyncIterator]();
  const first = await events.next();
  const states = [(first.value as { response: { statusUpdate?: { status: { state: string } } } }).response.statusUpdate?.status.state ?? ''];
  const rest = (async () => {
    for (let next = await events.next(); !next.done; next = await events.next()) states.push((next.value as { response: { statusUpdate?: { status: { state: string } } } }).response.statusUpdate?.status.state ?? '');
    return states;
  })();
  return { rest };
}

/** Waits (bounded) until `condition` holds. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let round = 0; round < 500; round++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`not reached: ${what}`);
}

describe('streams on a connection of their own', () => {
  it('three ownConnection streams: none on the policy dispatcher pool, each socket closed with its stream', async () => {
    const server = await startStreamServer();
    const dispatcher = createPolicyDispatcher({ allowLoopback: true });
    dispatchers.push(dispatcher);
    const streams = await Promise.all([0, 1, 2].map(() => openStream(server.url, dispatcher, { ownConnection: true })));
    expect(server.accepted).toBe(3);
    // The pool of the origin holds no request: the streams run on clients of their own.
    const running = Object.values(dispatcher.stats).reduce((sum, stats) => sum + (stats as { running: number }).running, 0);
    expect(running).toBe(0);
    server.endStreams();
    for (const stream of streams) expect(await stream.rest).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    // Closed with the stream, not kept alive in a pool.
    await until(() => server.open.size === 0, 'every stream socket closed');
  });

  it('without ownConnection the same streams run on the pool (the comparison), and stay open there after the end', async () => {
    const server = await startStreamServer();
    const dispatcher = createPolicyDispatcher({ allowLoopback: true });
    dispatchers.push(dispatcher);
    const streams = await Promise.all([0, 1, 2].map(() => openStream(server.url, dispatcher, {})));
    const running = Object.values(dispatcher.stats).reduce((sum, stats) => sum + (stats as { running: number }).running, 0);
    expect(running).toBe(3);
    server.endStreams();
    for (const stream of streams) expect(await stream.rest).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect(server.open.size).toBe(3);
  });

  it('the address check still applies: a loopback stream through a policy that refuses loopback is blocked', async () => {
    const server = await startStreamServer();
    const dispatcher = createPolicyDispatcher({});
    dispatchers.push(dispatcher);
    const failure = await openStream(server.url, dispatcher, { ownConnection: true }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).cause ?? failure).toBeInstanceOf(BlockedAddressError);
    expect(server.accepted).toBe(0);
  });

  it('an injected dispatcher that is not a policy dispatcher is used as it is', async () => {
    const server = await startStreamServer();
    const dispatcher = new Agent();
    dispatchers.push(dispatcher);
    const stream = await openStream(server.url, dispatcher, { ownConnection: true });
    const running = Object.values(dispatcher.stats).reduce((sum, stats) => sum + (stats as { running: number }).running, 0);
    expect(running).toBe(1);
    server.endStreams();
    expect(await stream.rest).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
  });
});
