/**
 * A plain call's answer framed as an event stream whose later frame cannot be read (over the SSE event size limit, or
 * left unterminated at the body's end: R04 reads no such event) is no answer of one event (`severalEvents` in src/jsonrpc.ts): the unreadable frame may say otherwise, as a readable one
 * may (a page listing our task after one listing nothing, our task after a refusal). Before, the reader of a whole body
 * (`serverSentEventsOf` in src/sse.ts) kept the events before the failure and dropped the failure: a SendMessage framed
 * as -32602 then an oversized frame was a refusal proving nothing was created (the step re-delegated: booked twice),
 * and a ListTasks framed as an empty page then an oversized one (or one listing our task without the blank line that
 * ends an event) was read as the empty page (the search concluded "absent" and our message went again).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, ProtocolError, sendEffectOf } from '../src/errors.ts';
import { DEFAULT_MAX_EVENT_SIZE_CHARS, serverSentEventsOf } from '../src/sse.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };
const task = { id: 'T1', contextId: 'c-ours', status: { state: 'TASK_STATE_COMPLETED' }, history: [message] };
const page = (tasks: unknown[]) => ({ tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length });
/** One frame past the SSE reader's event size limit (the body stays within `responseBodyBytes`). */
const oversized = `data: "${'x'.repeat(DEFAULT_MAX_EVENT_SIZE_CHARS + 16)}"\n\n`;
/** A frame without the blank line that ends an event (a whole body's last: not dispatched, R04). */
const unterminated = (value: unknown): string => `data: ${JSON.stringify(value)}\n`;

type Call = 'getTask' | 'listTasks' | 'sendMessage' | 'cancelTask';
const results: Record<Call, [unknown, unknown]> = {
  getTask: [task, { ...task, id: 'T2' }],
  listTasks: [page([]), page([task])],
  sendMessage: [{ task }, { task: { ...task, id: 'T2' } }],
  cancelTask: [task, task],
};

let answer: (id: unknown) => string = () => '';
let server: RawServer;
beforeAll(async () => {
  server = await startRawServer((request, response) => {
    const body = answer((JSON.parse(request.body) as { id: unknown }).id);
    response.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
});
afterAll(() => server.close());

const frame = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;
const refusal = (id: unknown) => ({ jsonrpc: '2.0', id, error: { code: -32602, message: 'refused' } });

/** What `call` gave: 'read', or what it threw. */
async function outcomeOf(call: Call): Promise<unknown> {
  const agent = createTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
  const calls: Record<Call, () => Promise<unknown>> = {
    getTask: () => agent.getTask({ id: 'T1' }),
    listTasks: () => agent.listTasks({ contextId: 'c-ours' }),
    sendMessage: () => agent.sendMessage({ message }),
    cancelTask: () => agent.cancelTask({ id: 'T1' }),
  };
  return calls[call]().then(
    () => 'read',
    (error: unknown) => error,
  );
}

describe('a plain call answered as events, a later one unreadable', () => {
  it('SendMessage framed as -32602 then an oversized frame: an unreadable answer (maybe sent), not a refusal', async () => {
    answer = (id) => frame(refusal(id)) + oversized;
    const outcome = await outcomeOf('sendMessage');
    expect(outcome).toBeInstanceOf(ProtocolError);
    expect((outcome as ProtocolError).delivery).toBe('received');
    expect(sendEffectOf(outcome, { namesTask: false })).toBe('maybe');
  }, 60_000);

  it('ListTasks framed as an empty page then an oversized frame: an unreadable answer, not the empty page', async () => {
    answer = (id) => frame({ jsonrpc: '2.0', id, result: page([]) }) + oversized;
    const outcome = await outcomeOf('listTasks');
    expect(outcome).toBeInstanceOf(ProtocolError);
    expect((outcome as ProtocolError).delivery).toBe('received');
  }, 60_000);

  it('ListTasks framed as an empty page then a page listing our task left unterminated: an unreadable answer, not the empty page', async () => {
    answer = (id) => frame({ jsonrpc: '2.0', id, result: page([]) }) + unterminated({ jsonrpc: '2.0', id, result: page([task]) });
    const outcome = await outcomeOf('listTasks');
    expect(outcome).toBeInstanceOf(ProtocolError);
    expect((outcome as ProtocolError).delivery).toBe('received');
  });

  it('one event left unterminated alone is still no event read (R04): the answer is unreadable, as before', async () => {
    answer = (id) => unterminated({ jsonrpc: '2.0', id, result: page([]) });
    expect(await outcomeOf('listTasks')).toBeInstanceOf(A2AError);
  });

  it('property: an answer is read from its first event only when it is the one frame (or a SendMessage success); an unreadable or unterminated later frame counts as a frame', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<Call>('getTask', 'listTasks', 'sendMessage', 'cancelTask'), fc.boolean(), fc.array(fc.nat(1), { maxLength: 2 }), fc.constantFrom('none', 'oversized', 'unterminated'), async (call, refused, after, last) => {
        answer = (id) =>
          (refused ? frame(refusal(id)) : frame({ jsonrpc: '2.0', id, result: results[call][0] })) +
          after.map((pick) => frame({ jsonrpc: '2.0', id, result: results[call][pick] })).join('') +
          (last === 'oversized' ? oversized : last === 'unterminated' ? unterminated({ jsonrpc: '2.0', id, result: results[call][1] }) : '');
        const frames = 1 + after.length + (last === 'none' ? 0 : 1);
        const outcome = await outcomeOf(call);
        if (!refused && (frames === 1 || call === 'sendMessage')) {
          expect(outcome).toBe('read');
          return;
        }
        expect(outcome).toBeInstanceOf(A2AError);
        if (frames === 1) {
          // The whole answer, a refusal: it proves nothing was created.
          expect(sendEffectOf(outcome, { namesTask: false })).toBe('none');
          return;
        }
        expect(outcome).toBeInstanceOf(ProtocolError);
        expect((outcome as ProtocolError).delivery).toBe('received');
        expect(sendEffectOf(outcome, { namesTask: false })).toBe('maybe');
      }),
      { numRuns: 40 },
    );
  }, 180_000);
});

describe('the whole-body reader, bounded', () => {
  // A plain call needs the first event and whether there is another: a 16 MiB body (within responseBodyBytes) of tiny
  // events cost 230 MB of heap and 2 s of CPU when every event was kept (measured; one such answer per concurrent call).
  it('reading stops at maxEvents: a body of a million tiny events gives 2 when 2 are asked for', () => {
    const body = 'data:1\n\n'.repeat(1_000_000);
    expect(serverSentEventsOf(body, {}, 2).events).toHaveLength(2);
  });

  it('property: the first maxEvents events, the same as a whole read gives, whatever the chunking of events and a bad tail', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z0-9 ]{0,40}$/), { maxLength: 40 }), fc.integer({ min: 1, max: 45 }), fc.boolean(), (datas, maxEvents, tail) => {
        const body = datas.map((data) => `data: ${data}\n\n`).join('') + (tail ? 'data: unterminated' : '');
        const all = serverSentEventsOf(body);
        const some = serverSentEventsOf(body, {}, maxEvents);
        expect(all.events.map((event) => event.data)).toEqual(datas);
        expect(some.events).toEqual(all.events.slice(0, maxEvents));
        // Fewer events than asked for: the whole body was read, its unterminated tail after an event told.
        if (datas.length < maxEvents) expect(some.unreadableAfter !== undefined).toBe(tail && datas.length > 0);
      }),
      { numRuns: 300 },
    );
  });
});
