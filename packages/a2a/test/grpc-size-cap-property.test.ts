/**
 * Property (attack12): a gRPC answer over our size cap (grpc-js's local RESOURCE_EXHAUSTED "Received message larger
 * than max") is an answer that arrived: `LimitExceededError`, delivery `received`, as an answer over a limit is on
 * JSON-RPC and HTTP+JSON (A31), whatever the declared size, the bytes that follow and the call. Before, a plain
 * protocol error with delivery `maybe`: the workers' search could resend a message the agent had answered.
 * A raw h2c server (exact frames).
 */
import http2 from 'node:http2';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AError } from '../src/errors.ts';
import { GrpcTransport } from '../src/grpc/transport.ts';

const CAP = 4096;
let answer = { declared: 0, sent: 0 };
let server: http2.Http2Server;
let url = '';
beforeAll(async () => {
  server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('error', () => undefined);
    stream.on('data', () => undefined);
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      const header = Buffer.alloc(5);
      header.writeUInt32BE(answer.declared, 1);
      stream.write(Buffer.concat([header, Buffer.alloc(answer.sent, 0x0a)]));
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('property: a gRPC answer over the size cap arrived', () => {
  it('over declared sizes, bytes sent and calls: LIMIT_EXCEEDED, delivery received', async () => {
    const transport = new GrpcTransport({ url, protocolBinding: 'GRPC', protocolVersion: '1.0' }, { requestTimeoutMs: 5_000, maxEventSizeChars: CAP });
    try {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: CAP + 1, max: 256 * 1024 * 1024 }), fc.integer({ min: 0, max: CAP * 2 }), fc.constantFrom('send', 'get', 'subscribe'), async (declared, sent, call) => {
          answer = { declared, sent: Math.min(sent, declared) };
          const drain = async (stream: AsyncIterable<unknown>) => {
            for await (const _event of stream) void _event;
          };
          const request =
            call === 'send' ? transport.sendMessage({ message: { messageId: 'M1', role: 'ROLE_USER', parts: [{ text: 'book' }] } })
            : call === 'get' ? transport.getTask({ id: 'T1' })
            : drain(transport.subscribeToTask({ id: 'T1' }));
          const error = await request.then(() => undefined, (caught: unknown) => caught);
          expect(error).toBeInstanceOf(A2AError);
          expect((error as A2AError).code).toBe('LIMIT_EXCEEDED');
          expect((error as A2AError).delivery).toBe('received');
        }),
        { numRuns: 40 },
      );
    } finally {
      transport.close();
    }
  });
});
