/**
 * Bounded inputs (docs/a2a-edge.md "Limits"; RT2, RT4 50 MB variant, RT5, RT7): every body, SSE event, Agent
 * Card, part list and nesting depth is bounded; reading stops at the limit while the bytes arrive (the
 * agent sees its connection closed long before it has sent everything), memory stays bounded, and the
 * error is a typed, permanent `LimitExceededError` naming the limit (never a network error).
 */
import type { ServerResponse } from 'node:http';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchAgentCard } from '../src/card.ts';
import { createTransport } from '../src/client.ts';
import { LimitExceededError } from '../src/errors.ts';
import { checkJsonDepth, DEFAULT_A2A_LIMITS, resolveLimits } from '../src/limits.ts';
import { normalizePushBody } from '../src/push.ts';
import { drainStream } from '../src/stream.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const MiB = 1024 * 1024;
const FILLER = Buffer.alloc(MiB, 'x');
const message = { messageId: 'm1', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };
const idOf = (body: string): unknown => (JSON.parse(body) as { id: unknown }).id;

/** Writes `head`, then `fillerMiB` MiB of `x` with backpressure, then `tail`, stopping when the client goes away. */
async function pour(response: ServerResponse, head: string, fillerMiB: number, tail: string, seen: { sent: number; closedAt?: number }): Promise<void> {
  response.on('close', () => void (seen.closedAt ??= seen.sent));
  const write = (chunk: Buffer | string) =>
    new Promise<void>((resolve) => {
      seen.sent += Buffer.byteLength(chunk);
      if (response.write(chunk)) resolve();
      else response.once('drain', resolve).once('close', resolve);
    });
  await write(head);
  for (let index = 0; index < fillerMiB && !response.destroyed; index++) await write(FILLER);
  if (!response.destroyed) response.end(tail);
}

const rssMiB = (): number => process.memoryUsage().rss / MiB;

describe('limits stop reading while the bytes arrive', () => {
  it('RT2: a 400 MiB Agent Card is refused at 1 MiB; the agent sees the connection closed early; RSS stays bounded', async () => {
    const seen = { sent: 0 } as { sent: number; closedAt?: number };
    server = await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      void pour(response, '{"name":"x","description":"', 400, '"}', seen);
    });
    const before = rssMiB();
    const error = await fetchAgentCard(`${server.url}/.well-known/agent-card.json`).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LimitExceededError);
    expect(error).toMatchObject({ limit: 'agentCardBytes', limitValue: DEFAULT_A2A_LIMITS.agentCardBytes, retryable: false });
    await expect.poll(() => seen.closedAt, { timeout: 5_000 }).toBeDefined();
    expect(seen.closedAt!).toBeLessThan(64 * MiB);
    if (process.env.EDGE_MEASURE) console.log('MEASURE card closedAt MiB', seen.closedAt! / MiB, 'rss delta MiB', rssMiB() - before);
    expect(rssMiB() - before).toBeLessThan(200);
  });

  it('RT5: a SendMessage answer with a 50 MB artifact is refused at 16 MiB (responseBodyBytes)', async () => {
    const seen = { sent: 0 } as { sent: number; closedAt?: number };
    server = await startRawServer((request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      const head = `{"jsonrpc":"2.0","id":${JSON.stringify(idOf(request.body))},"result":{"task":{"id":"T1","contextId":"C1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a1","parts":[{"text":"`;
      void pour(response, head, 50, '"}]}]}}}', seen);
    });
    const transport = createTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    const error = await transport.sendMessage({ message }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'responseBodyBytes', delivery: 'received', retryable: false });
    await expect.poll(() => seen.closedAt, { timeout: 5_000 }).toBeDefined();
    expect(seen.closedAt!).toBeLessThan(48 * MiB);
    if (process.env.EDGE_MEASURE) console.log('MEASURE answer closedAt MiB', seen.closedAt! / MiB);
  });

  it('RT4 variant: a single 50 MB SSE event is refused at 8 MiB (sseEventBytes)', async () => {
    const seen = { sent: 0 } as { sent: number; closedAt?: number };
    server = await startRawServer((request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const id = JSON.stringify(idOf(request.body));
      const head = `data: {"jsonrpc":"2.0","id":${id},"result":{"task":{"id":"T1","contextId":"C1","status":{"state":"TASK_STATE_WORKING"}}}}\n\ndata: {"jsonrpc":"2.0","id":${id},"result":{"artifactUpdate":{"taskId":"T1","artifact":{"artifactId":"a1","parts":[{"text":"`;
      void pour(response, head, 50, '"}]}}}}\n\n', seen);
    });
    const transport = createTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    let events = 0;
    const error = await drainStream(transport.subscribeToTask({ id: 'T1' }), () => void events++).catch((caught: unknown) => caught);
    expect(events).toBe(1); // the valid snapshot came through
    expect(error).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'sseEventBytes', retryable: false });
    await expect.poll(() => seen.closedAt, { timeout: 5_000 }).toBeDefined();
    expect(seen.closedAt!).toBeLessThan(40 * MiB);
    if (process.env.EDGE_MEASURE) console.log('MEASURE sse closedAt MiB', seen.closedAt! / MiB);
  });
});

describe('depth and part counts', () => {
  const deep = (levels: number): string => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

  it('RT7: a data part nested 5,000 levels deep -> LimitExceededError jsonDepth (not unreachable), in an answer and in a stream event', async () => {
    server = await startRawServer((request, response) => {
      const { id, method } = JSON.parse(request.body) as { id: number; method: string };
      const task = `{"id":"T1","contextId":"C1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a1","parts":[{"data":${deep(5_000)}}]}]}`;
      if (method === 'SubscribeToTask') {
        response.writeHead(200, { 'content-type': 'text/event-stream' }).end(`data: {"jsonrpc":"2.0","id":${id},"result":{"task":${task}}}\n\n`);
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(`{"jsonrpc":"2.0","id":${id},"result":${task}}`);
    });
    const transport = createTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    await expect(transport.getTask({ id: 'T1' })).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'jsonDepth', retryable: false });
    await expect(drainStream(transport.subscribeToTask({ id: 'T1' }), () => undefined)).rejects.toMatchObject({ limit: 'jsonDepth' });
  });

  it('1,001 parts in one artifact -> partsPerMessage; 1,000 pass; limits are configurable', async () => {
    let parts = 1_001;
    server = await startRawServer((request, response) => {
      const result = { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'a1', parts: Array.from({ length: parts }, () => ({ text: 'p' })) }] };
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: idOf(request.body), result }));
    });
    const agentInterface = { url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' };
    await expect(createTransport(agentInterface).getTask({ id: 'T1' })).rejects.toMatchObject({ limit: 'partsPerMessage', limitValue: 1_000 });
    parts = 1_000;
    expect((await createTransport(agentInterface).getTask({ id: 'T1' })).artifacts?.[0]?.parts).toHaveLength(1_000);
    await expect(createTransport(agentInterface, { limits: { responseBodyBytes: 1_000 } }).getTask({ id: 'T1' })).rejects.toMatchObject({ limit: 'responseBodyBytes', limitValue: 1_000 });
    await expect(createTransport(agentInterface, { limits: { partsPerMessage: 10 } }).getTask({ id: 'T1' })).rejects.toMatchObject({ limit: 'partsPerMessage', limitValue: 10 });
    expect(resolveLimits({ jsonDepth: 8, sseEventBytes: undefined })).toMatchObject({ jsonDepth: 8, sseEventBytes: 8 * MiB });
    const pushBody = { artifactUpdate: { taskId: 'T1', artifact: { artifactId: 'a1', parts: Array.from({ length: 1_001 }, () => ({ text: 'p' })) } } };
    expect(() => normalizePushBody(pushBody)).toThrow(LimitExceededError);
    expect(normalizePushBody(pushBody, { maxParts: 2_000 })).toMatchObject({ artifactUpdate: { taskId: 'T1' } });
  });

  it('property: checkJsonDepth refuses exactly the texts nested deeper than the limit', () => {
    const depthOf = (value: unknown): number =>
      typeof value === 'object' && value !== null ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0;
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 1, max: 8 }), (value, maxDepth) => {
        const text = JSON.stringify(value);
        const tooDeep = depthOf(value) > maxDepth;
        expect(() => checkJsonDepth(text, maxDepth)).toSatisfy((check: () => void) => {
          try {
            check();
            return !tooDeep;
          } catch (error) {
            return tooDeep && error instanceof LimitExceededError;
          }
        });
      }),
      { numRuns: 500 },
    );
    expect(() => checkJsonDepth(deep(1_000_000), 64)).toThrow(LimitExceededError); // no recursion, no stack overflow
  });
});

describe('B31: the artifact limit counts every stored byte', () => {
  it('metadata, names, descriptions and part metadata count, not only part content', async () => {
    const { artifactByteSize, artifactEntryBytes, storedArtifact } = await import('../src/limits.ts');
    const bare = { artifactId: 'a1', parts: [] };
    const heavy = { artifactId: 'a1', name: 'n'.repeat(1_000), description: 'd'.repeat(1_000), metadata: { blob: 'm'.repeat(2_000) }, parts: [{ text: '', metadata: { blob: 'p'.repeat(3_000) } }] };
    expect(artifactByteSize(heavy) - artifactByteSize(bare)).toBeGreaterThanOrEqual(7_000);
    const stored = storedArtifact(heavy);
    expect(stored.bytes).toBe(artifactEntryBytes(stored.artifactId) + Buffer.byteLength(stored.meta) + Buffer.byteLength(stored.parts));
  });
});
