/**
 * A JSON-RPC answer is read by its envelope, not by the HTTP framing around it (docs/a2a-edge.md "Ownership"): our
 * success envelope inside a 4xx/5xx, or inside a batch (an array) answering our one request, is the answer; an
 * envelope that does not carry our id is never adopted, whatever the status or position. Byte-exact node:http server.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, sendEffectOf, TaskNotFoundError } from '../src/errors.ts';
import { drainStream } from '../src/stream.ts';
import type { A2ATransport } from '../src/transport.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

const message = { messageId: 'm1', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };
const taskNamed = (id: string) => ({ id, contextId: 'c1', status: { state: 'TASK_STATE_COMPLETED' } });
/** A send's (or a stream frame's) result naming task `id`: 1.0 `{task}`, or the 0.3 bare kind-tagged Task. */
const resultNamed = (id: string, v03: boolean) => (v03 ? { kind: 'task', id, contextId: 'c1', status: { state: 'completed' } } : { task: taskNamed(id) });

type Item = { kind: 'ours-result' } | { kind: 'ours-error' } | { kind: 'foreign-result'; id: string | number | null } | { kind: 'junk' };
let answer: (requestId: unknown) => { status: number; body: string; contentType?: string } = () => ({ status: 200, body: '{}' });
let server: RawServer;
beforeAll(async () => {
  server = await startRawServer((request, response) => {
    const { status, body, contentType = 'application/json' } = answer((JSON.parse(request.body) as { id: unknown }).id);
    response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
});
afterAll(() => server.close());

const envelope = (item: Item, requestId: unknown, v03 = false): unknown => {
  switch (item.kind) {
    case 'ours-result':
      return { jsonrpc: '2.0', id: requestId, result: resultNamed('OURS', v03) };
    case 'ours-error':
      return { jsonrpc: '2.0', id: requestId, error: { code: -32001, message: 'no such task' } };
    case 'foreign-result':
      return { jsonrpc: '2.0', id: item.id, result: resultNamed('FOREIGN', v03) };
    case 'junk':
      return 'x';
  }
};

const transport = (v03 = false) => createTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: v03 ? '0.3' : '1.0' });

describe('examples', () => {
  it('HTTP 500 whose body is our success envelope: the task, not an UpstreamError', async () => {
    answer = (id) => ({ status: 500, body: JSON.stringify({ jsonrpc: '2.0', id, result: { task: taskNamed('OURS') } }) });
    expect(await transport().sendMessage({ message })).toMatchObject({ task: { id: 'OURS' } });
  });

  it('HTTP 503 whose body is another request\'s success envelope: the status decides (UpstreamError, effect maybe)', async () => {
    answer = () => ({ status: 503, body: JSON.stringify({ jsonrpc: '2.0', id: 'other', result: { task: taskNamed('FOREIGN') } }) });
    const error = await transport().sendMessage({ message }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'UPSTREAM_ERROR', delivery: 'received' });
    expect(sendEffectOf(error)).toBe('maybe');
  });

  it('a batch holding our error envelope at 200: the typed error', async () => {
    answer = (id) => ({ status: 200, body: JSON.stringify([{ jsonrpc: '2.0', id: 'x', result: {} }, { jsonrpc: '2.0', id, error: { code: -32001, message: 'gone' } }]) });
    await expect(transport().getTask({ id: 'T1' })).rejects.toBeInstanceOf(TaskNotFoundError);
  });
});

/** The task id a send answered (SendMessage), or its stream's first event named (SendStreamingMessage); or the error. */
async function sendOutcome(agent: A2ATransport, streaming: boolean): Promise<unknown> {
  if (!streaming) return agent.sendMessage({ message }).then((result) => ('task' in result ? result.task.id : 'message'), (error: unknown) => error);
  const ids: string[] = [];
  return drainStream(agent.sendStreamingMessage({ message }), (event) => void ids.push('task' in event.response ? event.response.task.id : 'other')).then(
    () => ids.join(','),
    (error: unknown) => error,
  );
}

describe('a plain request answered as a stream (SSE), as some servers answer every call', () => {
  it('SendMessage answered with text/event-stream whose first event is our success envelope: the task', async () => {
    answer = (id) => ({ status: 200, contentType: 'text/event-stream', body: `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { task: taskNamed('OURS') } })}\n\ndata: {"more":1}\n\n` });
    expect(await sendOutcome(transport(), false)).toBe('OURS');
  });

  it('SendMessage answered with text/event-stream whose first event is another request\'s envelope: an error, never its task', async () => {
    answer = () => ({ status: 200, contentType: 'text/event-stream', body: `data: ${JSON.stringify({ jsonrpc: '2.0', id: 'x', result: { task: taskNamed('FOREIGN') } })}\n\n` });
    const outcome = await sendOutcome(transport(), false);
    expect(outcome).toBeInstanceOf(A2AError);
    expect(outcome).toMatchObject({ delivery: 'received' });
  });
});

describe('a stream request answered with a whole JSON answer (the streaming method served as the plain one)', () => {
  for (const status of [200, 500]) {
    it(`SendStreamingMessage answered HTTP ${status} application/json with our success envelope: one event, the task`, async () => {
      answer = (id) => ({ status, body: JSON.stringify({ jsonrpc: '2.0', id, result: { task: taskNamed('OURS') } }) });
      expect(await sendOutcome(transport(), true)).toBe('OURS');
    });
  }

  it('SendStreamingMessage answered with another request\'s success envelope: an error, never its task', async () => {
    answer = () => ({ status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: 'other', result: { task: taskNamed('FOREIGN') } }) });
    const outcome = await sendOutcome(transport(), true);
    expect(outcome).toBeInstanceOf(A2AError);
    expect(outcome).toMatchObject({ delivery: 'received' });
  });

  // 0.3 streams read a whole JSON answer with the same reader as 1.0 (`followJsonRpcStream`).
  for (const status of [200, 500]) {
    it(`0.3 message/stream answered HTTP ${status} application/json with our success envelope (a bare 0.3 Task): one event, the task`, async () => {
      answer = (id) => ({ status, body: JSON.stringify({ jsonrpc: '2.0', id, result: resultNamed('OURS', true) }) });
      expect(await sendOutcome(transport(true), true)).toBe('OURS');
    });
  }

  it('0.3 message/stream answered with another request\'s success envelope: an error, never its task', async () => {
    answer = () => ({ status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: 'other', result: resultNamed('FOREIGN', true) }) });
    const outcome = await sendOutcome(transport(true), true);
    expect(outcome).toBeInstanceOf(A2AError);
    expect(outcome).toMatchObject({ delivery: 'received' });
  });
});

describe('property: our envelope is found wherever it is framed; a foreign one is never adopted', () => {
  it('any status, any batch, any ids, SendMessage or SendStreamingMessage, A2A 1.0 or 0.3', async () => {
    const item = fc.oneof(
      fc.constant<Item>({ kind: 'ours-result' }),
      fc.constant<Item>({ kind: 'ours-error' }),
      fc.record({ kind: fc.constant('foreign-result' as const), id: fc.oneof(fc.string({ maxLength: 4 }).filter((id) => id !== '1'), fc.integer({ min: 2, max: 9 }), fc.constant(null)) }),
      fc.constant<Item>({ kind: 'junk' }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(200, 201, 400, 404, 409, 429, 500, 502, 503), fc.boolean(), fc.array(item, { minLength: 1, maxLength: 4 }), fc.boolean(), fc.boolean(), fc.boolean(), async (status, batch, items, streaming, asSse, v03) => {
        const framed = batch ? items : items.slice(0, 1);
        answer = (requestId) => {
          const json = JSON.stringify(batch ? framed.map((each) => envelope(each, requestId, v03)) : envelope(framed[0]!, requestId, v03));
          // A 2xx plain answer framed as one SSE event (a server that answers every call as a stream).
          return asSse && !streaming && status < 300 ? { status, body: `data: ${json}\n\n`, contentType: 'text/event-stream' } : { status, body: json };
        };
        const outcome = await sendOutcome(transport(v03), streaming);
        const ours = framed.filter((each) => each.kind === 'ours-result' || each.kind === 'ours-error');
        // Never the foreign task, whatever the framing.
        expect(outcome).not.toBe('FOREIGN');
        if (ours.length === 1 && ours[0]!.kind === 'ours-result') expect(outcome).toBe('OURS');
        else expect(outcome).toBeInstanceOf(A2AError);
        if (outcome instanceof A2AError) expect(outcome.delivery).toBe('received');
      }),
      { numRuns: 200 },
    );
  });
});
