/**
 * Attack: answers with a `Content-Encoding` we never asked for (docs/a2a-edge.md "Content codings"). Some agents and
 * proxies compress every answer whatever the request says; read as raw bytes, every such answer was "not JSON": a
 * COMPLETED task thrown away on every method, every delegation to the agent ending with a person. The kind: an answer
 * is decoded before it is read, and every byte limit counts the decoded bytes (a gzip bomb stops at the limit).
 * Byte-exact node:http servers.
 */
import type { ServerResponse } from 'node:http';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { contentCodingsOf, MAX_CONTENT_CODINGS } from '../src/content-coding.ts';
import { LimitExceededError, ProtocolError, sendEffectOf } from '../src/errors.ts';
import { createHttpClient } from '../src/http.ts';
import { drainStream } from '../src/stream.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

/** `raw-deflate`: RFC 1951 without the zlib wrapper, sent as `Content-Encoding: deflate` (as some servers do). */
type Coding = 'gzip' | 'x-gzip' | 'deflate' | 'raw-deflate' | 'br' | 'identity';
const ENCODERS: Record<Coding, (bytes: Buffer) => Buffer> = {
  gzip: (bytes) => zlib.gzipSync(bytes),
  'x-gzip': (bytes) => zlib.gzipSync(bytes),
  deflate: (bytes) => zlib.deflateSync(bytes),
  'raw-deflate': (bytes) => zlib.deflateRawSync(bytes),
  br: (bytes) => zlib.brotliCompressSync(bytes),
  identity: (bytes) => bytes,
};
/** `bytes` with `codings` applied in order (the order a `Content-Encoding` list names them). */
const encode = (bytes: Buffer, codings: readonly Coding[]): Buffer => codings.reduce((body, coding) => ENCODERS[coding](body), bytes);
/** The `Content-Encoding` value naming `codings` (raw deflate goes by `deflate`). */
const headerOf = (codings: readonly Coding[]): string => codings.map((coding) => (coding === 'raw-deflate' ? 'deflate' : coding)).join(', ');

let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const MiB = 1024 * 1024;
const rpcId = (body: string): unknown => (JSON.parse(body) as { id: unknown }).id;
const message = { messageId: 'm1', role: 'ROLE_USER' as const, contextId: 'c1', parts: [{ text: 'hi' }] };
const completed = { id: 'T1', contextId: 'c1', status: { state: 'TASK_STATE_COMPLETED' }, history: [message], artifacts: [{ artifactId: 'a1', parts: [{ text: 'booked ✓ 日本' }] }] };

function answerEncoded(response: ServerResponse, payload: unknown, codings: readonly Coding[], status = 200): void {
  const body = encode(Buffer.from(JSON.stringify(payload)), codings);
  response.writeHead(status, { 'content-type': 'application/json', 'content-encoding': headerOf(codings), 'content-length': body.length });
  response.end(body);
}

const transport = () => createTransport({ url: server!.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });

describe('an answer in a content coding we never asked for is decoded before it is read', () => {
  for (const codings of [['gzip'], ['x-gzip'], ['deflate'], ['raw-deflate'], ['br'], ['gzip', 'br'], ['raw-deflate', 'gzip'], ['identity', 'gzip']] as Coding[][]) {
    it(`SendMessage, GetTask and ListTasks answered with ${codings.join(', ')} (Content-Encoding: ${headerOf(codings)}): read as sent`, async () => {
      server = await startRawServer((request, response) => {
        const { id, method } = JSON.parse(request.body) as { id: unknown; method: string };
        const result = method === 'SendMessage' ? { task: completed } : method === 'GetTask' ? completed : { tasks: [completed], nextPageToken: '', pageSize: 50, totalSize: 1 };
        answerEncoded(response, { jsonrpc: '2.0', id, result }, codings);
      });
      const agent = transport();
      expect(await agent.sendMessage({ message })).toMatchObject({ task: { id: 'T1', artifacts: [{ artifactId: 'a1', parts: [{ text: 'booked ✓ 日本' }] }] } });
      expect(await agent.getTask({ id: 'T1' })).toMatchObject({ id: 'T1', status: { state: 'TASK_STATE_COMPLETED' } });
      expect((await agent.listTasks({ contextId: 'c1' })).tasks).toHaveLength(1);
    });
  }

  for (const [method, coding] of [['SubscribeToTask', 'gzip'], ['SendStreamingMessage', 'gzip'], ['SubscribeToTask', 'raw-deflate']] as const) {
    it(`${method} answered with a ${coding} SSE stream flushed event by event: every event read, in order`, async () => {
      server = await startRawServer(async (request, response) => {
        const id = rpcId(request.body);
        response.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': headerOf([coding]) });
        const gzip = coding === 'gzip' ? zlib.createGzip() : zlib.createDeflateRaw();
        gzip.pipe(response);
        const frames = [{ task: { ...completed, status: { state: 'TASK_STATE_WORKING' }, artifacts: [] } }, { statusUpdate: { taskId: 'T1', contextId: 'c1', status: { state: 'TASK_STATE_COMPLETED' } } }];
        for (const result of frames) {
          gzip.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`);
          await new Promise<void>((resolve) => gzip.flush(() => resolve()));
        }
        gzip.end();
      });
      const events: unknown[] = [];
      const stream = method === 'SubscribeToTask' ? transport().subscribeToTask({ id: 'T1' }) : transport().sendStreamingMessage({ message });
      const end = await drainStream(stream, (event) => void events.push(event.response));
      expect(events).toHaveLength(2);
      expect(end).toMatchObject({ kind: 'terminal', eventCount: 2 });
    });
  }
});

describe('the limits count decoded bytes: a small compressed answer cannot become a large one', () => {
  for (const coding of ['gzip', 'raw-deflate'] as const) {
    it(`a 64 MiB SendMessage answer compressed (${coding}) to under 1 MiB stops at responseBodyBytes (LIMIT_EXCEEDED, delivery received)`, async () => {
      const huge = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"T1","metadata":{"x":"'), Buffer.alloc(64 * MiB, 'x'), Buffer.from('"}}}}')]);
      const bomb = coding === 'gzip' ? zlib.gzipSync(huge, { level: 9 }) : zlib.deflateRawSync(huge, { level: 9 });
      expect(bomb.length).toBeLessThan(MiB);
      server = await startRawServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': headerOf([coding]), 'content-length': bomb.length });
        response.end(bomb);
      });
      const error = await transport().sendMessage({ message }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(LimitExceededError);
      expect(error).toMatchObject({ limit: 'responseBodyBytes', delivery: 'received' });
      expect(sendEffectOf(error)).toBe('maybe');
    });
  }

  it('a gzip SSE event that decodes past sseEventBytes stops at that limit', async () => {
    const bomb = zlib.gzipSync(Buffer.concat([Buffer.from('data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"'), Buffer.alloc(32 * MiB, 'x'), Buffer.from('"}}}\n\n')]));
    server = await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      response.end(bomb);
    });
    const error = await drainStream(transport().subscribeToTask({ id: 'T1' }), () => undefined).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LimitExceededError);
    expect(error).toMatchObject({ limit: 'sseEventBytes', delivery: 'received' });
  });
});

describe('a coding we cannot decode is an unreadable answer: delivered, the effect unknown', () => {
  const cases: [string, (response: ServerResponse) => void][] = [
    ['an unknown coding (compress)', (response) => (response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'compress' }), response.end('{}'))],
    [`more than ${MAX_CONTENT_CODINGS} codings`, (response) => answerEncoded(response, { jsonrpc: '2.0', id: 1, result: { task: completed } }, ['gzip', 'gzip', 'gzip'])],
    ['a corrupt gzip body', (response) => (response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }), response.end(Buffer.from('\x1f\x8b\x08\x00not gzip at all')))],
    ['a deflate body that is neither zlib nor raw deflate', (response) => (response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'deflate' }), response.end(Buffer.from([0xff, 0xff, 0xff, 0x00, 0x01])))],
    ['a raw deflate body cut short', (response) => (response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'deflate' }), response.end(zlib.deflateRawSync(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: completed } })).subarray(0, 20)))],
    ['a gzip body cut short', (response) => (response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }), response.end(zlib.gzipSync(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: completed } })).subarray(0, 30)))],
  ];
  for (const [name, answer] of cases) {
    it(`SendMessage answered with ${name}: a ProtocolError with delivery received and effect maybe (searched, never re-sent blind)`, async () => {
      server = await startRawServer((_request, response) => answer(response));
      const error = await transport().sendMessage({ message }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ProtocolError);
      expect(error).toMatchObject({ delivery: 'received' });
      expect(sendEffectOf(error)).toBe('maybe');
    });
  }

  it('a stream in an unknown coding: the typed error, delivery received', async () => {
    server = await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'snappy' });
      response.end('data: {}\n\n');
    });
    const error = await drainStream(transport().subscribeToTask({ id: 'T1' }), () => undefined).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ delivery: 'received' });
  });
});

describe('property: any body, any codings we decode, any split into chunks: the client reads exactly what was sent', () => {
  let current: { chunks: Buffer[]; header: string } = { chunks: [], header: '' };
  let shared: RawServer;
  beforeAll(async () => {
    shared = await startRawServer(async (_request, response) => {
      const { chunks, header } = current;
      response.writeHead(200, { 'content-type': 'application/json', ...(header ? { 'content-encoding': header } : {}) });
      for (const chunk of chunks) await new Promise<void>((resolve) => response.write(chunk, () => resolve()));
      response.end();
    });
  });
  afterAll(() => shared.close());

  it('decoded text equals the original; past the limit LIMIT_EXCEEDED, never a partial text', async () => {
    const limit = 4096;
    const http = createHttpClient({ limits: { responseBodyBytes: limit } });
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', maxLength: 3000 }),
        fc.array(fc.constantFrom<Coding>('gzip', 'x-gzip', 'deflate', 'raw-deflate', 'br', 'identity'), { maxLength: 3 }).filter((codings) => contentCodingsOf(headerOf(codings)).length <= MAX_CONTENT_CODINGS),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 8 }),
        async (text, codings, cuts) => {
          const plain = Buffer.from(text, 'utf8');
          const encoded = encode(plain, codings);
          const chunks: Buffer[] = [];
          for (let offset = 0, index = 0; offset < encoded.length; index++) {
            const size = cuts[index % cuts.length]!;
            chunks.push(encoded.subarray(offset, offset + size));
            offset += size;
          }
          current = { chunks, header: headerOf(codings) };
          const outcome = await http.request({ method: 'POST', url: shared.url, body: '{}' }).then(
            (response) => response.bodyText,
            (error: unknown) => error,
          );
          if (plain.length > limit) expect(outcome).toBeInstanceOf(LimitExceededError);
          else expect(outcome).toBe(plain.toString('utf8'));
        },
      ),
      { numRuns: 150 },
    );
  });
});
