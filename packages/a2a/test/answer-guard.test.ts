/**
 * Every agent text that is parsed as JSON is held to every limit, whatever its leading bytes (attack 23: a body whose
 * JSON started after 64 leading spaces skipped `jsonDepth`, while the parser stripped them), and once an answer's
 * bytes arrived, failing to process it is an A2A error with delivery `received`, never a bare runtime error
 * (`answer-fault.ts`). Real HTTP servers on port 0, the real transports.
 */
import http2 from 'node:http2';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { answerFault, readingAnswer } from '../src/answer-fault.ts';
import { createTransport } from '../src/client.ts';
import { LimitExceededError, ProtocolError } from '../src/errors.ts';
import { parseJsonText } from '../src/response.ts';
import { drainStream } from '../src/stream.ts';
import { encodeFromJson, GRPC_SERVICE_NAMES, methodOf, serviceType } from '../src/grpc/codec.ts';
import { GrpcTransport } from '../src/grpc/transport.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Route = 'answer' | 'stream-event' | 'stream-answer';

const nested = (depth: number): string => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
/** A COMPLETED task whose one data part is `depth` levels deep. */
const taskJson = (depth: number): string =>
  `{"id":"T1","contextId":"C1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a1","parts":[{"data":${nested(depth)}}]}]}`;
/** Levels around the data part: the envelope, the task, artifacts, the artifact, parts, the part (and `{task}` on a stream). */
const levelsAround = (route: Route): number => (route === 'answer' ? 6 : 7);

/** Characters JSON.parse after `parseJsonText`'s stripping accepts before the value: JSON whitespace, RS, BOM, and what `\s` also strips. */
const PAD_CHARS = [' ', '\t', '\n', '\r', '\u001e', '\ufeff', '\u00a0', '\u2028', '\u3000'];
/** The same for an SSE `data:` line (no line breaks). */
const SSE_PAD_CHARS = [' ', '\t', '\u001e', '\ufeff', '\u00a0', '\u3000'];

/** A JSON-RPC agent answering GetTask / SubscribeToTask with the task `depth` deep behind `pad`, on `route`. */
async function agentWith(route: Route, pad: string, depth: number): Promise<RawServer> {
  return startRawServer((request, response) => {
    const { id } = JSON.parse(request.body) as { id: number };
    if (route === 'stream-event') {
      response.writeHead(200, { 'content-type': 'text/event-stream' }).end(`data: ${pad}{"jsonrpc":"2.0","id":${id},"result":{"task":${taskJson(depth)}}}\n\n`);
      return;
    }
    const result = route === 'stream-answer' ? `{"task":${taskJson(depth)}}` : taskJson(depth);
    response.writeHead(200, { 'content-type': 'application/json' }).end(`${pad}{"jsonrpc":"2.0","id":${id},"result":${result}}`);
  });
}

const call = (route: Route, jsonDepth: number) => {
  const transport = createTransport({ url: server!.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, { limits: { jsonDepth } });
  return route === 'answer' ? transport.getTask({ id: 'T1' }) : drainStream(transport.subscribeToTask({ id: 'T1' }), () => undefined);
};

describe('every parsed answer is held to jsonDepth, whatever its leading bytes', () => {
  it('case: a GetTask answer nested 100 deep behind 64 leading spaces is LIMIT_EXCEEDED jsonDepth (was: accepted)', async () => {
    server = await agentWith('answer', ' '.repeat(64), 100);
    await expect(call('answer', 64)).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'jsonDepth', delivery: 'received' });
  });

  it('property: any padding the parser accepts, any depth over the limit, any route: refused as LIMIT_EXCEEDED jsonDepth', async () => {
    const padOf = (chars: string[]) => fc.array(fc.constantFrom(...chars), { maxLength: 300 }).map((list) => list.join(''));
    const input = fc.constantFrom<Route>('answer', 'stream-event', 'stream-answer').chain((route) =>
      fc.record({
        route: fc.constant(route),
        pad: padOf(route === 'stream-event' ? SSE_PAD_CHARS : PAD_CHARS),
        limit: fc.integer({ min: 8, max: 64 }),
        over: fc.integer({ min: 1, max: 200 }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(input, async ({ route, pad, limit, over }) => {
        // The padding is one a parser of agent text reads past: the same answer within the limit is read (a whole
        // answer to a stream request is read by `JSON.parse` itself: JSON whitespace only; other padding there is
        // read as an error body by `parseJsonText`, so the deep one must be refused all the same).
        expect(parseJsonText(`${pad}[1]`, 'padded')).toEqual([1]);
        if (route !== 'stream-answer' || /^[ \t\n\r]*$/.test(pad)) {
          server = await agentWith(route, pad, limit - levelsAround(route));
          await expect(call(route, limit)).resolves.toBeDefined();
          await server.close();
        }
        server = await agentWith(route, pad, limit - levelsAround(route) + over);
        await expect(call(route, limit)).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'jsonDepth', delivery: 'received' });
        await server.close();
        server = undefined;
      }),
      {
        numRuns: 40,
        examples: [
          [{ route: 'answer', pad: ' '.repeat(64), limit: 64, over: 1 }],
          [{ route: 'answer', pad: `\ufeff${' '.repeat(64)}`, limit: 64, over: 36 }],
          [{ route: 'stream-answer', pad: `\u001e${'\n'.repeat(70)}`, limit: 64, over: 1 }],
          [{ route: 'stream-event', pad: '\u00a0'.repeat(100), limit: 32, over: 5 }],
        ],
      },
    );
  });
});

describe('an answer that arrived and cannot be processed is an A2A error with delivery received', () => {
  it('answerFault / readingAnswer: a RangeError is jsonDepth, any other fault a protocol error, an A2A error keeps its class', () => {
    expect(answerFault(new RangeError('Maximum call stack size exceeded'), 'the answer', 64)).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'jsonDepth', limitValue: 64, delivery: 'received' });
    expect(answerFault(new TypeError('x is not a function'), 'the answer')).toBeInstanceOf(ProtocolError);
    expect(answerFault(new TypeError('x'), 'the answer')).toMatchObject({ code: 'PROTOCOL_ERROR', delivery: 'received' });
    const limit = new LimitExceededError('partsPerMessage', 10);
    expect(answerFault(limit, 'the answer')).toBe(limit);
    expect(() => readingAnswer('the answer', () => JSON.stringify(JSON.parse(nested(200_000))))).toThrow(LimitExceededError);
    expect(readingAnswer('the answer', () => 7)).toBe(7);
  });
});

describe('a gRPC answer is held to jsonDepth too (a Struct nests as JSON does)', () => {
  it('case: under jsonDepth 20 a data part nested 30 deep is LIMIT_EXCEEDED jsonDepth, 10 deep is read; 70 deep (past protobuf\'s own recursion limit) is refused with delivery received', async () => {
    const deepValue = (levels: number): unknown => JSON.parse(nested(levels));
    let depth = 30;
    const h2 = http2.createServer();
    h2.on('stream', (stream) => {
      stream.on('error', () => undefined);
      stream.on('data', () => undefined);
      stream.on('end', () => {
        const task = { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'a1', parts: [{ data: deepValue(depth) }] }] };
        const bytes = encodeFromJson(methodOf(serviceType(GRPC_SERVICE_NAMES['1.0']), 'GetTask').output, task);
        const header = Buffer.alloc(5);
        header.writeUInt32BE(bytes.length, 1);
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.write(Buffer.concat([header, bytes]));
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end();
      });
    });
    h2.listen(0, '127.0.0.1');
    await once(h2, 'listening');
    const transport = new GrpcTransport({ url: `http://127.0.0.1:${(h2.address() as AddressInfo).port}`, protocolBinding: 'GRPC', protocolVersion: '1.0' }, { requestTimeoutMs: 5_000, limits: { jsonDepth: 20 } });
    try {
      await expect(transport.getTask({ id: 'T1' })).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'jsonDepth', delivery: 'received' });
      depth = 10;
      await expect(transport.getTask({ id: 'T1' })).resolves.toMatchObject({ id: 'T1' });
      depth = 70;
      await expect(transport.getTask({ id: 'T1' })).rejects.toMatchObject({ delivery: 'received', retryable: false });
    } finally {
      transport.close();
      await new Promise<void>((resolve) => h2.close(() => resolve()));
    }
  });
});
