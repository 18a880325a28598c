/**
 * Red-team round 12: agent answers attack10 did not try. Real redis-server, real fleet, scripted raw JSON-RPC agents
 * and a raw h2c gRPC agent (exact bytes); the HTTP+JSON cases are in `rest-framing.test.ts`.
 */
import http2 from 'node:http2';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { finished, useFieldCases } from '../harness/field-cases.ts';
import { startRawAgent } from '../harness/raw-agent.ts';
import { task } from '../harness/scripted-agent.ts';

const h = useFieldCases();

describe('attack12: a JSON-RPC SendMessage answered in a 4xx whose body is a task not proven ours', () => {
  // The agent created a task (the body names one), whatever the status: never "nothing created" (FAILED would let the
  // step go to another agent), never adopted either (not proven ours: another request's id, or none and another context).
  const agentsOwn = () => task('T5', 'WORKING', { contextId: 'agents-own' });
  const bodies: [string, (id: unknown) => unknown][] = [
    ['a JSON-RPC envelope with another request\'s id', () => ({ jsonrpc: '2.0', id: 'someone-else', result: { task: agentsOwn() } })],
    ['a JSON-RPC envelope without an id', () => ({ jsonrpc: '2.0', id: null, result: { task: agentsOwn() } })],
    ['a bare Task', () => agentsOwn()],
  ];
  for (const status of [400, 404, 422]) {
    for (const [name, body] of bodies) {
      it(`HTTP ${status}, ${name}: not FAILED, one SendMessage`, async () => {
        const { producer, agent, id } = await h.setUpAndDelegate(() => ({
          SendMessage: (_params, call) => ({ http: { status, body: JSON.stringify(body(call.id)) } }),
          ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
        }), { reconcileIntervalMs: 300 });
        const record = await finished(producer, id, 30_000);
        expect(record.state, JSON.stringify(record.error)).not.toBe('FAILED');
        expect(record.taskId).toBeUndefined();
        expect(agent.count('SendMessage')).toBe(1);
      }, 45_000);
    }
  }
});

/** An empty gRPC message (length 0) and status OK: ListTasks lists nothing, GetTask reads an empty task. */
const emptyOk = (stream: http2.ServerHttp2Stream) => {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.write(Buffer.alloc(5));
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
  stream.end();
};

/**
 * A raw h2c gRPC agent (each call answered by `answer` once its request ended, with its request message's length) behind a JSON Agent Card naming it, a
 * fleet, one delegation to it: `check` gets the finished record and the gRPC paths called.
 */
async function withGrpcAgent(answer: (stream: http2.ServerHttp2Stream, path: string, requestLength: number) => void, check: (record: NonNullable<Awaited<ReturnType<typeof finished>>>, paths: string[]) => Promise<void>) {
  const paths: string[] = [];
  const grpc = http2.createServer();
  grpc.on('stream', (stream, headers) => {
    const path = String(headers[':path']);
    paths.push(path);
    stream.on('error', () => undefined);
    let received = 0;
    stream.on('data', (chunk: Buffer) => (received += chunk.length));
    // The request message's length: what was received, its 5-byte frame header off.
    stream.on('end', () => answer(stream, path, received - 5));
  });
  grpc.listen(0, '127.0.0.1');
  await once(grpc, 'listening');
  const grpcUrl = `http://127.0.0.1:${(grpc.address() as AddressInfo).port}`;
  const card = await startRawAgent((request, response) => {
    const text = JSON.stringify({
      name: 'gRPC', description: 'a gRPC agent', version: '1.0.0',
      capabilities: { streaming: false, pushNotifications: false },
      defaultInputModes: ['text'], defaultOutputModes: ['text'],
      skills: [{ id: 'book', name: 'book', description: 'book', tags: [] }],
      supportedInterfaces: [{ protocolBinding: 'GRPC', url: grpcUrl, protocolVersion: '1.0' }],
    });
    response.writeHead(request.url?.startsWith('/.well-known/agent-card.json') ? 200 : 404, { 'content-type': 'application/json' });
    response.end(text);
  });
  try {
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
    const { id } = await producer.delegate({ agent: `${card.url}/.well-known/agent-card.json`, text: 'go', idempotencyKey: `${prefix}-1` });
    await check(await finished(producer, id, 30_000), paths);
  } finally {
    await card.close();
    await new Promise<void>((resolve) => grpc.close(() => resolve()));
  }
}

describe('a gRPC server refusing our SendMessage as over ITS size cap (RESOURCE_EXHAUSTED, its max not ours)', () => {
  // The same bytes meet the same cap: no retry can help; the handler never ran, so nothing was created. Before, an
  // UPSTREAM_ERROR retried as a quota would be, searched for and resent until the attempts ran out.
  it('the step fails at once: FAILED REQUEST_TOO_LARGE (not retryable, delivery not-sent), one SendMessage', async () => {
    await withGrpcAgent(
      (stream, path, requestLength) => {
        if (!path.endsWith('/SendMessage')) return emptyOk(stream);
        // As a server's decoder reports it: our request message's own length (review14: another is no refusal of ours).
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '8', 'grpc-message': `Received message larger than max (${requestLength} vs 4)` }, { endStream: true });
      },
      async (record, paths) => {
        expect(record.state).toBe('FAILED');
        expect(record.error).toMatchObject({ code: 'REQUEST_TOO_LARGE', retryable: false, delivery: 'not-sent' });
        expect(paths.filter((path) => path.endsWith('/SendMessage'))).toHaveLength(1);
      },
    );
  }, 45_000);
});

describe('attack12: a gRPC SendMessage answered with one message over our size cap', () => {
  // The agent answered (a message arrived): as an answer over a limit on JSON-RPC and HTTP+JSON (A31), a person
  // decides; never "nothing happened". Before, grpc-js's local RESOURCE_EXHAUSTED was a plain protocol error with
  // delivery maybe: the search, which sees no task at this agent, resent our message.
  it('SendMessage answers a 64 MiB message, ListTasks lists nothing: AMBIGUOUS LIMIT_EXCEEDED, one SendMessage', async () => {
    await withGrpcAgent(
      (stream, path) => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        const header = Buffer.alloc(5);
        // SendMessage: a message declared 64 MiB long (a few bytes of it follow); anything else: an empty message.
        header.writeUInt32BE(path.endsWith('/SendMessage') ? 64 * 1024 * 1024 : 0, 1);
        stream.write(path.endsWith('/SendMessage') ? Buffer.concat([header, Buffer.alloc(1024, 0x0a)]) : header);
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end();
      },
      async (record, paths) => {
        expect(record.state).toBe('AMBIGUOUS');
        expect(record.error?.code).toBe('LIMIT_EXCEEDED');
        expect(paths.filter((path) => path.endsWith('/SendMessage'))).toHaveLength(1);
      },
    );
  }, 45_000);
});
