/** SSE framing: the chunking property, and field cases R02, R03, R04 on the reader side. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../src/errors.ts';
import type { HttpStreamResponse } from '../src/http.ts';
import { decodeJsonRpcStreamEvent, decodeJsonRpcStreamError } from '../src/jsonrpc.ts';
import { readServerSentEvents, type SseMessage } from '../src/sse.ts';
import { drainStream, followEventStream } from '../src/stream.ts';
import type { StreamEvent } from '../src/transport.ts';
import { AU, SU, bodyOf, ev, utf8 } from './helpers/raw-server.ts';

async function readAll(chunks: Uint8Array[], maxEventSizeChars?: number): Promise<SseMessage[]> {
  const messages: SseMessage[] = [];
  for await (const message of readServerSentEvents(bodyOf(chunks), { idleTimeoutMs: 0, maxEventSizeChars })) messages.push(message);
  return messages;
}

/** Follows a JSON-RPC stream whose body is `chunks`. */
async function followChunks(chunks: Uint8Array[]) {
  const response = { status: 200, contentType: 'text/event-stream', body: bodyOf(chunks) as unknown as HttpStreamResponse['body'] };
  const events: StreamEvent[] = [];
  const end = await drainStream(followEventStream(response, decodeJsonRpcStreamEvent, decodeJsonRpcStreamError, { idleTimeoutMs: 0 }), (event) => {
    events.push(event);
  });
  return { events, end };
}

function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const positions = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const position of positions) {
    chunks.push(bytes.slice(start, position)); // may be empty: empty chunks must be harmless too
    start = position;
  }
  chunks.push(bytes.slice(start));
  return chunks;
}

describe('SSE reader', () => {
  const noLineBreaks = (text: string) => !/[\r\n]/.test(text);
  const lineText = fc.string({ unit: 'binary', maxLength: 12 }).filter(noLineBreaks);
  const eventArbitrary = fc.record({
    event: fc.option(fc.stringMatching(/^[a-z]{1,6}$/), { nil: undefined }),
    id: fc.option(fc.string({ unit: 'binary', maxLength: 4 }).filter((text) => noLineBreaks(text) && !text.includes('\0')), { nil: undefined }),
    dataLines: fc.array(lineText, { minLength: 1, maxLength: 3 }),
    comment: fc.boolean(),
  });

  it('gives the same events for any chunking, line ending and BOM (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(eventArbitrary, { maxLength: 6 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (events, newline, withBom, cuts) => {
          let text = withBom ? '\uFEFF' : '';
          const expected: SseMessage[] = [];
          let lastEventId: string | undefined;
          for (const event of events) {
            if (event.comment) text += `: keep-alive${newline}`;
            if (event.event !== undefined) text += `event: ${event.event}${newline}`;
            if (event.id !== undefined) text += `id: ${event.id}${newline}`;
            for (const line of event.dataLines) text += `data: ${line}${newline}`;
            text += newline;
            if (event.id !== undefined) lastEventId = event.id;
            expected.push({
              ...(event.event === undefined ? {} : { event: event.event }),
              data: event.dataLines.join('\n'),
              ...(lastEventId === undefined ? {} : { lastEventId }),
            });
          }
          const bytes = utf8(text);
          expect(await readAll(splitAt(bytes, cuts))).toEqual(expected);
          expect(await readAll([bytes])).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('R02: one event over several data: lines with event: and id: fields', async () => {
    const input =
      'event: message\nid: 7\ndata: {"jsonrpc":"2.0","id":1,"result":\ndata:  {"artifactUpdate":{"taskId":"T1","contextId":"C1","artifact":{"artifactId":"a1","parts":[{"text":"l1\\nl2"}]},"append":false,"lastChunk":true}}}\n\n';
    const { events, end } = await followChunks([utf8(input)]);
    expect(events).toHaveLength(1);
    const response = events[0]!.response;
    expect('artifactUpdate' in response && response.artifactUpdate.artifact.parts[0]?.text).toBe('l1\nl2');
    expect(events[0]!.eventId).toBe('7');
    expect(end.lastEventId).toBe('7');
  });

  it('R03: a multi-byte character split across chunks is decoded once, without U+FFFD', async () => {
    const bytes = utf8(ev(AU('a1', false, true, 'café')));
    const cut = bytes.indexOf(0xc3) + 1; // between C3 and A9
    expect(bytes[cut]).toBe(0xa9);
    const { events } = await followChunks([bytes.slice(0, cut), bytes.slice(cut)]);
    const response = events[0]!.response;
    expect('artifactUpdate' in response && response.artifactUpdate.artifact.parts[0]?.text).toBe('café');
  });

  it('R03: a BOM split as EF | BB BF + event still delivers the first event', async () => {
    const { events } = await followChunks([Uint8Array.of(0xef), new Uint8Array([0xbb, 0xbf, ...utf8(ev(SU('WORKING')))])]);
    expect(events).toHaveLength(1);
    expect('statusUpdate' in events[0]!.response && events[0]!.response.statusUpdate.status.state).toBe('TASK_STATE_WORKING');
  });

  it('R03: an empty first decoded chunk (EF BB held back) does not use up the first-chunk handling', async () => {
    const { events } = await followChunks([new Uint8Array(), Uint8Array.of(0xef, 0xbb), new Uint8Array([0xbf, ...utf8(ev(SU('WORKING')))])]);
    expect(events).toHaveLength(1);
  });

  it('R03: a decoded U+FEFF at the very start is stripped (second BOM after the decoder took one)', async () => {
    const { events } = await followChunks([Uint8Array.of(0xef, 0xbb, 0xbf), new Uint8Array([0xef, 0xbb, 0xbf, ...utf8(ev(SU('WORKING')))])]);
    expect(events).toHaveLength(1);
  });

  it('R04: an unterminated last event at EOF is discarded and the end is incomplete', async () => {
    const input = `${ev(SU('WORKING'))}data: ${SU('COMPLETED')}\n`;
    const { events, end } = await followChunks([utf8(input)]);
    expect(events).toHaveLength(1);
    expect(end).toEqual({ kind: 'incomplete', lastState: 'TASK_STATE_WORKING', eventCount: 1 });
  });

  it('classifies terminal and interrupted ends', async () => {
    expect((await followChunks([utf8(ev(SU('WORKING')) + ev(SU('COMPLETED')))])).end.kind).toBe('terminal');
    expect((await followChunks([utf8(ev(SU('INPUT_REQUIRED')))])).end.kind).toBe('interrupted');
    expect((await followChunks([utf8(': only a comment\n\n')])).end).toEqual({ kind: 'incomplete', eventCount: 0 });
  });

  it('a CR-terminated event at a chunk end is delivered without waiting for more bytes', async () => {
    const messages: SseMessage[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const body = {
      async *[Symbol.asyncIterator]() {
        yield utf8('data: x\r\r');
        await gate;
      },
    };
    for await (const message of readServerSentEvents(body, { idleTimeoutMs: 0 })) {
      messages.push(message);
      release();
    }
    expect(messages).toEqual([{ data: 'x' }]);
  }, 5_000);

  it('an event over the size cap is a ProtocolError, in one chunk or many', async () => {
    const big = `data: ${'x'.repeat(100)}\n\n`;
    await expect(readAll([utf8(big)], 50)).rejects.toBeInstanceOf(ProtocolError);
    await expect(readAll([utf8(big.slice(0, 60)), utf8(big.slice(60))], 50)).rejects.toBeInstanceOf(ProtocolError);
  });
});
