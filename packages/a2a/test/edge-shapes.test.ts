/**
 * Issue 12, kind 3 "shapes" (field cases V1, V4): an unambiguous answer is read whatever its wrapping:
 * a Task without `kind`, a bare Task as a send result, extra fields, whole-Task stream events, a leading
 * 0x1E record separator before the JSON of an SSE data line. Only unreadable answers are errors.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidAgentResponseError, ProtocolError } from '../src/errors.ts';
import { JsonRpcTransport } from '../src/jsonrpc.ts';
import { drainStream } from '../src/stream.ts';
import { SendMessageResponseSchema, StreamResponseSchema } from '../src/schema.ts';
import type { StreamEvent } from '../src/transport.ts';
import { JsonRpcV03Transport } from '../src/v03/jsonrpc.ts';
import { EventV03Schema, eventFromV03 } from '../src/v03/wire.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const RS = '\x1E';
const idOf = (body: string): unknown => (JSON.parse(body) as { id: unknown }).id;
const voltTask = (state: string) => ({
  id: 't1',
  contextId: 'c1',
  status: { state, timestamp: '2026-11-30T10:00:00.000Z', message: { kind: 'message', messageId: 'r1', role: 'agent', parts: [{ kind: 'text', text: 'Volt echo: hello' }] } },
  history: [{ kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hello' }] }],
  metadata: { agentId: 'echo' },
  extraField: { anything: true },
});
const message = { messageId: 'm1', role: 'ROLE_USER' as const, parts: [{ text: 'hello' }] };

describe('V1: a send answer without the kind discriminator is a Task', () => {
  it('0.3 JSON-RPC message/send -> {task} with the final status message (V3) and history', async () => {
    server = await startRawServer((request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: idOf(request.body), result: voltTask('completed') }));
    });
    const transport = new JsonRpcV03Transport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' });
    const answer = await transport.sendMessage({ message });
    expect('task' in answer && answer.task).toMatchObject({
      id: 't1',
      contextId: 'c1',
      status: { state: 'TASK_STATE_COMPLETED', message: { role: 'ROLE_AGENT', parts: [{ text: 'Volt echo: hello' }] } },
      history: [{ messageId: 'm1' }],
    });
  });

  it('1.0 JSON-RPC SendMessage answered with a bare Task (and 0.3 parts inside) -> {task}', async () => {
    server = await startRawServer((request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: idOf(request.body), result: voltTask('TASK_STATE_WORKING') }));
    });
    const transport = new JsonRpcTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    const answer = await transport.sendMessage({ message });
    expect(answer).toMatchObject({ task: { id: 't1', status: { state: 'TASK_STATE_WORKING' } } });
  });

  it('only a truly unreadable answer is an error', async () => {
    let result: unknown = { hello: 'world' };
    server = await startRawServer((request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: idOf(request.body), result }));
    });
    const transport = new JsonRpcV03Transport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' });
    await expect(transport.sendMessage({ message })).rejects.toBeInstanceOf(InvalidAgentResponseError);
    result = { id: 't1' }; // a Task needs a status
    await expect(transport.sendMessage({ message })).rejects.toMatchObject({ retryable: false, delivery: 'received' });
  });
});

describe('V4: a stream whose data lines start with 0x1E, whole-Task events, no final', () => {
  it('0.3 message/stream: every record read as a Task snapshot; the stream ends terminal', async () => {
    server = await startRawServer((request, response) => {
      const id = idOf(request.body);
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const state of ['submitted', 'working', 'completed']) response.write(`data: ${RS}${JSON.stringify({ jsonrpc: '2.0', id, result: voltTask(state) })}\n\n`);
      response.end();
    });
    for (const transport of [
      new JsonRpcV03Transport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' }),
      new JsonRpcTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }),
    ]) {
      const events: StreamEvent[] = [];
      const end = await drainStream(transport.sendStreamingMessage({ message }), (event) => void events.push(event));
      expect(events.map((event) => 'task' in event.response && event.response.task.status.state)).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
      expect(end).toMatchObject({ kind: 'terminal', eventCount: 3 });
    }
  });

  it('data that is not JSON after the separator is still a ProtocolError', async () => {
    server = await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' }).end(`data: ${RS}not json\n\n`);
    });
    const transport = new JsonRpcV03Transport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' });
    await expect(drainStream(transport.sendStreamingMessage({ message }), () => undefined)).rejects.toBeInstanceOf(ProtocolError);
  });
});

describe('property: one object, any unambiguous wrapping, the same 1.0 reading', () => {
  const states = fc.constantFrom('working', 'TASK_STATE_COMPLETED', 'input-required', 'FAILED');
  const task = fc.record({
    id: fc.string({ minLength: 1, maxLength: 8 }),
    contextId: fc.string({ minLength: 1, maxLength: 8 }),
    state: states,
    text: fc.string({ maxLength: 20 }),
    extra: fc.dictionary(fc.constantFrom('foo', 'bar', 'vendorX'), fc.jsonValue({ maxDepth: 3 })),
  });

  it('bare, kind-tagged, wrapped, with extra fields: 1.0 stream event, 1.0 send result, 0.3 event all agree', () => {
    fc.assert(
      fc.property(task, fc.constantFrom('bare', 'kind', 'wrapped', 'wrapped+kind'), ({ id, contextId, state, text, extra }, form) => {
        const inner = { ...extra, id, contextId, status: { state, message: { messageId: 'x', role: 'agent', parts: [{ kind: 'text', text }] } } };
        const value = form === 'bare' ? inner : form === 'kind' ? { ...inner, kind: 'task' } : form === 'wrapped' ? { task: inner } : { task: { ...inner, kind: 'task' } };
        const v1 = StreamResponseSchema.parse(value);
        expect(SendMessageResponseSchema.parse(value)).toEqual(v1);
        expect(eventFromV03(EventV03Schema.parse(value))).toEqual(v1);
        expect('task' in v1 && v1.task.id).toBe(id);
        expect('task' in v1 && v1.task.status.message?.parts).toEqual([{ text }]);
      }),
      { numRuns: 300 },
    );
  });
});

describe('V2: an agent that holds the send until the work is done', () => {
  it('the request timeout cuts it ("maybe" delivered); a per-call deadline (the attempt\'s) lets it finish', async () => {
    server = await startRawServer(async (request, response) => {
      await new Promise((resolve) => setTimeout(resolve, 800));
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: idOf(request.body), result: voltTask('completed') }));
    });
    const transport = new JsonRpcV03Transport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' }, { requestTimeoutMs: 300 });
    await expect(transport.sendMessage({ message })).rejects.toMatchObject({ code: 'NETWORK_ERROR', delivery: 'maybe' });
    const answer = await transport.sendMessage({ message }, { timeoutMs: 10_000 });
    expect(answer).toMatchObject({ task: { id: 't1', status: { state: 'TASK_STATE_COMPLETED' } } });
  });
});

describe('property: an informational field that does not parse never rejects the whole answer (A37 kind)', () => {
  // Anything an agent may put where a status timestamp or a history entry belongs.
  const junk = fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 })));
  const ourMessage = { messageId: 'M1', role: 'ROLE_USER', parts: [{ text: 'go' }] };

  it('1.0 and 0.3: the task reads with its state and artifacts; unreadable history entries are dropped, readable ones kept', () => {
    fc.assert(
      fc.property(junk, fc.array(junk, { maxLength: 3 }), (timestamp, entries) => {
        const value = { id: 't1', contextId: 'c1', status: { state: 'TASK_STATE_COMPLETED', timestamp }, history: [...entries, ourMessage], artifacts: [{ artifactId: 'a1', parts: [{ text: 'done' }] }] };
        const parsed = SendMessageResponseSchema.parse({ task: value });
        expect('task' in parsed && parsed.task.status.state).toBe('TASK_STATE_COMPLETED');
        const task = (parsed as { task: { history?: { messageId: string }[]; artifacts?: unknown[]; status: { timestamp?: unknown } } }).task;
        expect(task.history?.some((message) => message.messageId === 'M1')).toBe(true);
        expect(task.artifacts).toHaveLength(1);
        expect(task.status.timestamp === undefined || typeof task.status.timestamp === 'string').toBe(true);
        const v03 = EventV03Schema.parse({ kind: 'task', id: 't1', contextId: 'c1', status: { state: 'completed', timestamp }, history: [...entries, { kind: 'message', messageId: 'M1', role: 'user', parts: [{ kind: 'text', text: 'go' }] }] });
        expect((v03 as { history?: { messageId: string }[] }).history?.some((message) => message.messageId === 'M1')).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('a number timestamp is that instant (epoch seconds or milliseconds)', () => {
    const read = (timestamp: number) => (SendMessageResponseSchema.parse({ task: { id: 't1', status: { state: 'TASK_STATE_WORKING', timestamp } } }) as { task: { status: { timestamp?: string } } }).task.status.timestamp;
    expect(read(1_767_225_600)).toBe('2026-01-01T00:00:00.000Z');
    expect(read(1_767_225_600_000)).toBe('2026-01-01T00:00:00.000Z');
  });
});
