/**
 * Property (review12): a gRPC server's own refusal of our request as over ITS receive cap (grpc-js servers answer
 * RESOURCE_EXHAUSTED "Received message larger than max (<n> vs <server max>)", the very text grpc-js raises locally for
 * an answer over OUR cap) is the server's status: the handler never ran, nothing was created. It must not be read as
 * an answer over our cap (LimitExceededError with delivery received: AMBIGUOUS, a person decides). Only the reported
 * max equal to our own cap is our local cap. A real grpc-js server (handler calls counted) and a raw h2c server that
 * sends the status trailers-only, over server caps other than ours and calls. A refusal that retrying the same bytes
 * cannot fix: REQUEST_TOO_LARGE, not retryable, nothing reached the agent (`expectServerRefusal`).
 */
import http2 from 'node:http2';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Server, ServerCredentials, type UntypedServiceImplementation } from '@grpc/grpc-js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AError, RequestTooLargeError, sendEffectOf } from '../src/errors.ts';
import { callError, withGrpcTransport } from './helpers/grpc-calls.ts';

const CAP = 64 * 1024;
const SERVER_CAP = 256;
let handled = 0;
let grpcServer: Server;
let grpcUrl = '';
let serverMax = 100;
let reportedOffset = 0;
let raw: http2.Http2Server;
let rawUrl = '';

beforeAll(async () => {
  grpcServer = new Server({ 'grpc.max_receive_message_length': SERVER_CAP });
  const handler = (_call: unknown, callback: (error: null, value: Buffer) => void) => {
    handled += 1;
    callback(null, Buffer.alloc(0));
  };
  const path = (method: string) => ({ path: `/lf.a2a.v1.A2AService/${method}`, requestStream: false, responseStream: false, requestSerialize: (value: Buffer) => value, requestDeserialize: (value: Buffer) => value, responseSerialize: (value: Buffer) => value, responseDeserialize: (value: Buffer) => value });
  grpcServer.addService({ SendMessage: path('SendMessage'), GetTask: path('GetTask') }, { SendMessage: handler, GetTask: handler } as UntypedServiceImplementation);
  const port = await new Promise<number>((resolve, reject) => grpcServer.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
  grpcUrl = `http://127.0.0.1:${port}`;
  raw = http2.createServer();
  raw.on('stream', (stream) => {
    stream.on('error', () => undefined);
    let received = 0;
    stream.on('data', (chunk: Buffer) => (received += chunk.length));
    stream.on('end', () => {
      // The length it reports: our request message's (its 5-byte frame header off), or, as a proxy relaying its refusal
      // of the agent's answer would, another (review14).
      const length = received - 5 + reportedOffset;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '8', 'grpc-message': `Received message larger than max (${length} vs ${serverMax})` }, { endStream: true });
    });
  });
  raw.listen(0, '127.0.0.1');
  await once(raw, 'listening');
  rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
});
afterAll(async () => {
  grpcServer.forceShutdown();
  await new Promise<void>((resolve) => raw.close(() => resolve()));
});

const outcome = (error: unknown) => ({ code: (error as A2AError).code, retryable: (error as A2AError).retryable, delivery: (error as A2AError).delivery });
/**
 * The server's RESOURCE_EXHAUSTED is its refusal of our request's bytes (status-table.ts): REQUEST_TOO_LARGE, not
 * retryable (the same bytes meet the same cap: before, UPSTREAM_ERROR retryable, resent until the attempts ran out),
 * delivery not-sent (the handler never ran: nothing created), never an answer over our cap (LIMIT_EXCEEDED, received).
 */
const expectServerRefusal = (error: unknown) => {
  expect(error).toBeInstanceOf(RequestTooLargeError);
  expect(outcome(error)).toEqual({ code: 'REQUEST_TOO_LARGE', retryable: false, delivery: 'not-sent' });
  expect(sendEffectOf(error)).toBe('none');
};

describe('property: a server refusing our request as over its cap is not an answer over ours', () => {
  it('a real grpc-js server with a small receive cap: the handler never ran, no LIMIT_EXCEEDED with delivery received', async () => {
    await withGrpcTransport(grpcUrl, CAP, async (transport) => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: SERVER_CAP + 1, max: 8 * 1024 }), async (textLength) => {
          const error = await callError(transport, 'send', 'b'.repeat(textLength));
          expectServerRefusal(error);
        }),
        { numRuns: 10 },
      );
      expect(handled).toBe(0);
    });
  });

  it('a raw server sending that status trailers-only, over server caps other than ours and calls', async () => {
    await withGrpcTransport(rawUrl, CAP, async (transport) => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 256 * 1024 * 1024 }).filter((max) => max !== CAP), fc.constantFrom('send' as const, 'get' as const), async (max, call) => {
          serverMax = max;
          reportedOffset = 0;
          const error = await callError(transport, call, call === 'send' ? 'book' : 'T1');
          expectServerRefusal(error);
        }),
        { numRuns: 40 },
      );
    });
  });

  it('review14: the same status reporting a length other than our request\'s (a proxy refusing the agent\'s answer) is no proof nothing reached the agent', async () => {
    await withGrpcTransport(rawUrl, CAP, async (transport) => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 256 * 1024 * 1024 }).filter((max) => max !== CAP), fc.integer({ min: -3, max: 1_000_000 }).filter((offset) => offset !== 0), fc.constantFrom('send' as const, 'get' as const), async (max, offset, call) => {
          serverMax = max;
          reportedOffset = offset;
          const error = await callError(transport, call, call === 'send' ? 'book' : 'T1');
          expect(error).not.toBeInstanceOf(RequestTooLargeError);
          expect((error as A2AError).delivery).not.toBe('not-sent');
          expect(sendEffectOf(error)).toBe('maybe');
        }),
        { numRuns: 40 },
      );
    });
  });
});
