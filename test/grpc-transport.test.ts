/**
 * The gRPC transport's edges against a raw grpc-js server we script per test:
 * the status table (and ErrorInfo details), the idle watchdog and stream-end
 * classification, the message size cap, undecodable answers, deadlines, caller
 * aborts, TLS by URL scheme and the address policy at connection time.
 */
import { randomUUID } from 'node:crypto';
import { Metadata, Server, ServerCredentials, status, type ServerUnaryCall, type ServerWritableStream, type ServiceError, type sendUnaryData } from '@grpc/grpc-js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  A2AError,
  AuthenticationError,
  BlockedAddressError,
  InvalidAgentResponseError,
  NetworkError,
  ProtocolError,
  StreamIdleError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  UpstreamError,
  createPolicyDispatcher,
  drainStream,
  A2A_ERROR_TABLE,
} from '../packages/a2a/src/index.ts';
import { errorClassForReason } from '../packages/a2a/src/errors.ts';
import { GrpcTransport } from '../packages/a2a/src/grpc/transport.ts';
import { grpcEndpoint } from '../packages/a2a/src/grpc/channel.ts';
import { encodeFromJson, messageType } from '../packages/a2a/src/grpc/codec.ts';
import { GRPC_STATUS_DETAILS_KEY, GRPC_STATUS_TABLE, errorFromGrpc } from '../packages/a2a/src/grpc/status-table.ts';

type Unary = (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => void;
type Streaming = (call: ServerWritableStream<Buffer, Buffer>) => void;

const encode = (typeName: string, json: unknown): Buffer => encodeFromJson(messageType(`lf.a2a.v1.${typeName}`), json);
const task = (state: string) => ({ id: 'task-1', contextId: 'ctx-1', status: { state } });
const event = (state: string): Buffer => encode('StreamResponse', { statusUpdate: { taskId: 'task-1', contextId: 'ctx-1', status: { state } } });

/** `google.rpc.Status` with one ErrorInfo, as the `grpc-status-details-bin` trailer carries it. */
function statusDetails(code: number, reason: string): Metadata {
  const details = encodeFromJson(messageType('google.rpc.Status'), {
    code,
    message: reason,
    details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' }],
  });
  const metadata = new Metadata();
  metadata.set(GRPC_STATUS_DETAILS_KEY, details);
  return metadata;
}

const handlers: { getTask?: Unary; stream?: Streaming } = {};
let server: Server;
let url: string;
const passBytes = (value: Buffer): Buffer => value;

beforeAll(async () => {
  server = new Server();
  const method = (path: string, responseStream: boolean) => ({ path, requestStream: false, responseStream, requestSerialize: passBytes, requestDeserialize: passBytes, responseSerialize: passBytes, responseDeserialize: passBytes });
  server.addService(
    { GetTask: method('/lf.a2a.v1.A2AService/GetTask', false), SendStreamingMessage: method('/lf.a2a.v1.A2AService/SendStreamingMessage', true) },
    {
      GetTask: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => handlers.getTask!(call, callback),
      SendStreamingMessage: (call: ServerWritableStream<Buffer, Buffer>) => handlers.stream!(call),
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  url = `http://127.0.0.1:${port}`;
});
const opened: GrpcTransport[] = [];
afterAll(() => {
  for (const transport of opened) transport.close();
  server.forceShutdown();
});

const transportFor = (options: ConstructorParameters<typeof GrpcTransport>[1] = {}, target = url): GrpcTransport => {
  const transport = new GrpcTransport({ url: target, protocolBinding: 'GRPC', protocolVersion: '1.0' }, options);
  opened.push(transport);
  return transport;
};
const send = (transport: GrpcTransport) => transport.sendStreamingMessage({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] } });
const serviceError = (code: status, metadata = new Metadata()): ServiceError => Object.assign(new Error('boom'), { code, details: 'boom', metadata });

describe('gRPC status table', () => {
  it('maps the transient codes to retryable errors and the A2A ones per spec §5.4', () => {
    expect(errorFromGrpc(serviceError(status.UNAVAILABLE), url)).toBeInstanceOf(UpstreamError);
    expect(errorFromGrpc(serviceError(status.DEADLINE_EXCEEDED), url)).toBeInstanceOf(NetworkError);
    expect(errorFromGrpc(serviceError(status.UNAVAILABLE), url).retryable).toBe(true);
    expect(errorFromGrpc(serviceError(status.DEADLINE_EXCEEDED), url).retryable).toBe(true);
    expect(errorFromGrpc(serviceError(status.NOT_FOUND), url)).toBeInstanceOf(TaskNotFoundError);
    expect(errorFromGrpc(serviceError(status.UNIMPLEMENTED), url)).toBeInstanceOf(UnsupportedOperationError);
    expect(errorFromGrpc(serviceError(status.UNAUTHENTICATED), url)).toBeInstanceOf(AuthenticationError);
  });

  it('an ErrorInfo reason decides over the status code', () => {
    const error = errorFromGrpc(serviceError(status.FAILED_PRECONDITION, statusDetails(status.FAILED_PRECONDITION, 'TASK_NOT_CANCELABLE')), url);
    expect(error).toBeInstanceOf(TaskNotCancelableError);
    expect(error.reason).toBe('TASK_NOT_CANCELABLE');
  });

  it('property: every status code and reason gives a typed error: a known reason its class, else the status row', () => {
    const reasons = A2A_ERROR_TABLE.flatMap((row) => (row.reason ? [row.reason] : []));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.option(fc.oneof(fc.constantFrom(...reasons), fc.string()), { nil: undefined }), (code, reason) => {
        const metadata = reason === undefined ? new Metadata() : statusDetails(code, reason);
        const error = errorFromGrpc(serviceError(code, metadata), url);
        expect(error).toBeInstanceOf(A2AError);
        const expected = (reason ? errorClassForReason(reason) : undefined) ?? GRPC_STATUS_TABLE.get(code) ?? ProtocolError;
        expect(error).toBeInstanceOf(expected);
      }),
      { numRuns: 200 },
    );
  });

  it('garbage in the details trailer is ignored, the status code decides', () => {
    const metadata = new Metadata();
    metadata.set(GRPC_STATUS_DETAILS_KEY, Buffer.from([0xff, 0xff, 0xff]));
    expect(errorFromGrpc(serviceError(status.NOT_FOUND, metadata), url)).toBeInstanceOf(TaskNotFoundError);
  });
});

describe('gRPC transport against a scripted server', () => {
  it('a status with ErrorInfo from the server arrives as its typed error', async () => {
    handlers.getTask = (_call, callback) => callback({ code: status.NOT_FOUND, details: 'gone', metadata: statusDetails(status.NOT_FOUND, 'TASK_NOT_FOUND') });
    await expect(transportFor().getTask({ id: 'x' })).rejects.toMatchObject({ code: 'TASK_NOT_FOUND', reason: 'TASK_NOT_FOUND' });
  });

  it('bytes that are not the message are InvalidAgentResponseError, not a success', async () => {
    handlers.getTask = (_call, callback) => callback(null, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff]));
    await expect(transportFor().getTask({ id: 'x' })).rejects.toBeInstanceOf(InvalidAgentResponseError);
  });

  it('a valid message that is not a valid task (no id) is InvalidAgentResponseError', async () => {
    handlers.getTask = (_call, callback) => callback(null, encode('Task', { status: { state: 'TASK_STATE_WORKING' } }));
    await expect(transportFor().getTask({ id: 'x' })).rejects.toBeInstanceOf(InvalidAgentResponseError);
  });

  it('a server that never answers: our deadline, a retryable NetworkError', async () => {
    handlers.getTask = () => undefined;
    const error = await transportFor({ requestTimeoutMs: 200 }).getTask({ id: 'x' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).retryable).toBe(true);
  });

  it('the caller aborting rejects with its reason', async () => {
    handlers.getTask = () => undefined;
    const controller = new AbortController();
    const pending = transportFor().getTask({ id: 'x' }, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('caller gave up')), 50);
    await expect(pending).rejects.toThrow('caller gave up');
  });

  it('a stream that goes quiet before a terminal state: StreamIdleError (retryable)', async () => {
    handlers.stream = (call) => void call.write(encode('StreamResponse', { task: task('TASK_STATE_WORKING') }));
    const events: unknown[] = [];
    const error = await drainStream(send(transportFor({ idleTimeoutMs: 200 })), (received) => void events.push(received)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamIdleError);
    expect(events).toHaveLength(1);
  });

  it('stream-end classification: terminal, interrupted, and closed early (incomplete)', async () => {
    const cases: [string[], string][] = [
      [['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'], 'terminal'],
      [['TASK_STATE_WORKING', 'TASK_STATE_AUTH_REQUIRED'], 'interrupted'],
      [['TASK_STATE_WORKING'], 'incomplete'],
      [[], 'incomplete'],
    ];
    for (const [states, kind] of cases) {
      handlers.stream = (call) => {
        for (const state of states) call.write(event(state));
        call.end();
      };
      expect(await drainStream(send(transportFor()), () => undefined)).toMatchObject({ kind, eventCount: states.length });
    }
  });

  it('a message over the size cap is a ProtocolError, and the cap is per message', async () => {
    const big = 'x'.repeat(4_096);
    handlers.stream = (call) => {
      call.write(encode('StreamResponse', { artifactUpdate: { taskId: 'task-1', contextId: 'ctx-1', artifact: { artifactId: 'a', parts: [{ text: big }] } } }));
      call.end();
    };
    await expect(drainStream(send(transportFor({ maxEventSizeChars: 1_024 })), () => undefined)).rejects.toBeInstanceOf(ProtocolError);
    expect(await drainStream(send(transportFor({ maxEventSizeChars: 8_192 })), () => undefined)).toMatchObject({ eventCount: 1 });
  });

  it('a stream failing with UNAVAILABLE after events throws a retryable error (the follow worker resubscribes)', async () => {
    handlers.stream = (call) => {
      call.write(event('TASK_STATE_WORKING'));
      call.emit('error', { code: status.UNAVAILABLE, details: 'going away' });
    };
    const error = await drainStream(send(transportFor()), () => undefined).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UpstreamError);
  });
});

describe('gRPC connections', () => {
  it('TLS by URL scheme; other schemes refused', () => {
    expect(grpcEndpoint('https://agent.example.com/a2a/grpc')).toMatchObject({ secure: true, port: 443, host: 'agent.example.com' });
    expect(grpcEndpoint('http://127.0.0.1:50051')).toMatchObject({ secure: false, port: 50051, authority: '127.0.0.1:50051' });
    expect(() => grpcEndpoint('grpc://agent.example.com:443')).toThrow(ProtocolError);
    expect(() => grpcEndpoint('agent.example.com:443')).toThrow(ProtocolError);
  });

  it('https to a plaintext server fails transiently (the TLS handshake was attempted), nothing served', async () => {
    let served = 0;
    handlers.getTask = (_call, callback) => (served++, callback(null, encode('Task', task('TASK_STATE_WORKING'))));
    const tls = transportFor({ requestTimeoutMs: 2_000 }, url.replace('http:', 'https:'));
    const error = await tls.getTask({ id: 'x' }).catch((caught: unknown) => caught);
    expect((error as A2AError).retryable).toBe(true);
    expect(served).toBe(0);
  });

  it('the address policy is applied at connection time: loopback refused unless allowed (own option or the dispatcher\'s)', async () => {
    let served = 0;
    handlers.getTask = (_call, callback) => (served++, callback(null, encode('Task', task('TASK_STATE_WORKING'))));
    await expect(transportFor({ addressPolicy: {} }).getTask({ id: 'x' })).rejects.toBeInstanceOf(BlockedAddressError);
    await expect(transportFor({ dispatcher: createPolicyDispatcher({}) }).getTask({ id: 'x' })).rejects.toBeInstanceOf(BlockedAddressError);
    expect(served).toBe(0);
    expect(await transportFor({ dispatcher: createPolicyDispatcher({ allowLoopback: true }) }).getTask({ id: 'x' })).toMatchObject({ id: 'task-1' });
    expect(served).toBe(1);
  });

  it('connection refused is a retryable UpstreamError', async () => {
    const closed = transportFor({}, 'http://127.0.0.1:1');
    await expect(closed.getTask({ id: 'x' })).rejects.toBeInstanceOf(UpstreamError);
  });
});
