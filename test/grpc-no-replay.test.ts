/**
 * P35: no layer below the journal resends a non-idempotent call. A gRPC agent (raw node:http2, h2c) that records our
 * SendMessage and then resets the stream with REFUSED_STREAM ("never processed") would get a second SendMessage from
 * grpc-js's transparent retry, creating a second task. With `grpc.enable_retries: 0` on our channels the agent sees
 * exactly one request, and the failure reaches us as a retryable (maybe delivered) error for the search to resolve.
 */
import http2 from 'node:http2';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AError, isRetryable } from '../packages/a2a/src/index.ts';
import { GrpcTransport } from '../packages/a2a/src/grpc/transport.ts';

let server: http2.Http2Server;
let url: string;
const seen: string[] = [];

beforeAll(async () => {
  server = http2.createServer();
  server.on('stream', (stream, headers) => {
    seen.push(String(headers[':path']));
    stream.on('error', () => undefined);
    // Read the whole request (the agent "records M1"), then claim it was never processed.
    stream.on('data', () => undefined);
    stream.on('end', () => {
      stream.session?.goaway(http2.constants.NGHTTP2_NO_ERROR, 3);
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('P35: a refused SendMessage stream is never replayed below the journal', () => {
  it.each(['sendMessage', 'sendStreamingMessage'] as const)('%s reaches the agent once and fails as maybe delivered', async (method) => {
    seen.length = 0;
    const transport = new GrpcTransport({ url, protocolBinding: 'GRPC', protocolVersion: '1.0' }, { requestTimeoutMs: 5_000 });
    try {
      const message = { messageId: randomUUID(), role: 'ROLE_USER' as const, parts: [{ text: 'book' }] };
      const call = method === 'sendMessage' ? transport.sendMessage({ message }) : (async () => { for await (const _ of transport.sendStreamingMessage({ message })) void _; })();
      const error = await call.then(() => undefined, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(A2AError);
      // Retryable at our layer: the send path treats it as "maybe delivered" (the search decides), never "not sent".
      expect(isRetryable(error)).toBe(true);
      expect(seen.filter((path) => path.endsWith(method === 'sendMessage' ? '/SendMessage' : '/SendStreamingMessage'))).toHaveLength(1);
    } finally {
      transport.close();
    }
  });
});
