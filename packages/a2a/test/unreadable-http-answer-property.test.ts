/**
 * An answer that arrived but is no HTTP/1.1 answer undici can read (a head past its header limit, a status line, a
 * header token or a chunk size that does not parse, Content-Length headers that disagree, a body shorter than its
 * length) is a typed A2A error, delivery never `not-sent`, and never proof that nothing was created (attack 31:
 * `HeadersOverflowError`, `HTTPParserError` and `ResponseContentLengthMismatchError` left the transport untyped; the
 * workers took them for their own faults and rethrew them, so a search or a read of our task failed for ever, the
 * delegation INTENT or WORKING, nobody told). Byte-exact node:net server; JSON-RPC 1.0 and 0.3, HTTP+JSON; plain
 * calls and streams.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, sendEffectOf } from '../src/errors.ts';
import type { A2ATransport } from '../src/transport.ts';

type Binding = 'jsonrpc-1.0' | 'jsonrpc-0.3' | 'rest-1.0';
type Call = 'getTask' | 'listTasks' | 'sendMessage' | 'cancelTask' | 'subscribeToTask' | 'sendStreamingMessage';

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };
const body = '{"jsonrpc":"2.0","id":1,"result":{}}';

/** The bytes of one broken answer of each family; `received`: the bytes prove the server answered. */
const broken: fc.Arbitrary<{ bytes: string; received: boolean }> = fc.oneof(
  // A head past undici's 16 KiB limit on a response head.
  fc.record({ name: fc.stringMatching(/^x-[a-z]{1,12}$/), size: fc.integer({ min: 17 * 1024, max: 160 * 1024 }) }).map(({ name, size }) => ({
    bytes: `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${name}: ${'v'.repeat(size)}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    received: true,
  })),
  // A status line that is not HTTP/1.x.
  fc.record({ head: fc.stringMatching(/^[A-GJ-QS-Z][A-Z]{2,6}$/), rest: fc.stringMatching(/^[ -~]{0,20}$/) }).map(({ head, rest }) => ({ bytes: `${head}/1.1 200 OK${rest}\r\n\r\n${body}`, received: true })),
  // A header line without a valid token and colon.
  fc.stringMatching(/^[a-z]{1,8} [a-z]{1,8}$/).map((line) => ({ bytes: `HTTP/1.1 200 OK\r\n${line}\r\nContent-Length: ${body.length}\r\n\r\n${body}`, received: true })),
  // A chunk size that is not hex.
  fc.stringMatching(/^[g-zG-Z]{1,6}$/).map((size) => ({ bytes: `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${size}\r\n${body}\r\n0\r\n\r\n`, received: true })),
  // Two Content-Length headers that disagree.
  fc.tuple(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 1, max: 5_000 })).map(([first, delta]) => ({
    bytes: `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${first}\r\nContent-Length: ${first + delta}\r\n\r\n${body}`,
    received: true,
  })),
  // A body shorter than its Content-Length, then the connection closed (a stream's reader sees only the close: maybe).
  fc.integer({ min: 1, max: 10_000 }).map((extra) => ({ bytes: `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length + extra}\r\n\r\n${body}`, received: false })),
);

let answer = '';
let server: Server;
let url = '';
const sockets = new Set<Socket>();
beforeAll(async () => {
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let head = '';
    socket.on('data', (chunk) => {
      head += chunk.toString('latin1');
      // One request per connection: answer once its head and body are in (a Content-Length body or none).
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length:\s*(\d+)/i.exec(head.slice(0, end))?.[1] ?? 0);
      if (head.length - end - 4 < length) return;
      socket.end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function transportFor(binding: Binding): A2ATransport {
  if (binding === 'rest-1.0') return createTransport({ url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }, { requestTimeoutMs: 5_000 });
  return createTransport({ url, protocolBinding: 'JSONRPC', protocolVersion: binding === 'jsonrpc-0.3' ? '0.3' : '1.0' }, { requestTimeoutMs: 5_000 });
}

/** What `call` threw (or `'no error'`). A stream is read to its end. */
async function thrownBy(binding: Binding, call: Call): Promise<unknown> {
  const agent = transportFor(binding);
  try {
    if (call === 'getTask') await agent.getTask({ id: 'T1' });
    else if (call === 'listTasks') await agent.listTasks({ contextId: 'c-ours' });
    else if (call === 'sendMessage') await agent.sendMessage({ message });
    else if (call === 'cancelTask') await agent.cancelTask({ id: 'T1' });
    else {
      const stream = call === 'subscribeToTask' ? agent.subscribeToTask({ id: 'T1' }) : agent.sendStreamingMessage({ message });
      for await (const _event of stream) {
        // read to the end
      }
    }
    return 'no error';
  } catch (error) {
    return error;
  }
}

const bindings = fc.constantFrom<Binding>('jsonrpc-1.0', 'jsonrpc-0.3', 'rest-1.0');
const calls = fc.constantFrom<Call>('getTask', 'listTasks', 'sendMessage', 'cancelTask', 'subscribeToTask', 'sendStreamingMessage');

describe('an answer undici cannot read as HTTP', () => {
  it('property: every call on every binding throws a typed A2A error, delivered (never not-sent), never proof that nothing was created', async () => {
    await fc.assert(
      fc.asyncProperty(bindings, calls, broken, async (binding, call, { bytes, received }) => {
        if (binding === 'jsonrpc-0.3' && call === 'listTasks') return; // 0.3 has no tasks/list
        answer = bytes;
        const error = await thrownBy(binding, call);
        expect(error).toBeInstanceOf(A2AError);
        const typed = error as A2AError;
        expect(typed.delivery).not.toBe('not-sent');
        if (received) expect(typed.delivery).toBe('received');
        expect(sendEffectOf(typed, { namesTask: false })).toBe('maybe');
      }),
      { numRuns: 120 },
    );
  }, 120_000);
});
