/**
 * Server-Sent Events reader (WHATWG HTML §9.2 "Server-sent events") over an
 * undici response body, with an idle watchdog and a size cap. Binding-agnostic:
 * it yields raw SSE messages; `stream.ts` turns them into A2A events.
 *
 * Guarantee: identical bytes give identical messages whatever the chunk
 * boundaries (inside multi-byte UTF-8 or the BOM) and line endings (LF, CRLF, CR).
 */
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import { LimitExceededError, ProtocolError, StreamIdleError } from './errors.ts';
import { toNetworkError } from './http.ts';
import { checkJsonDepth, DEFAULT_A2A_LIMITS } from './limits.ts';
import { MAX_TIMER_DELAY_MS } from './long-timer.ts';
import { utf8TextOf } from './utf8.ts';

/** One dispatched SSE event. `lastEventId` is the last `id:` seen on this connection (it persists across events). */
export interface SseMessage {
  event?: string;
  data: string;
  lastEventId?: string;
}

/** A response body: bytes, and a way to release the connection early. */
export type ByteBody = AsyncIterable<Uint8Array> & { destroy?: (error?: Error) => unknown };

/** Options of `readServerSentEvents`: watchdog, size and depth caps, abort signal. */
export interface SseReaderOptions {
  /** Longest wait for any byte (events and `:` keep-alive comments both count). 0 disables. Default 60_000. */
  idleTimeoutMs?: number;
  /** Largest event, in UTF-16 characters of `data` plus any unterminated line. Default `DEFAULT_MAX_EVENT_SIZE_CHARS`. */
  maxEventSizeChars?: number;
  /** Largest event in bytes, counted as they arrive (`limits.ts` `sseEventBytes`). Default 8 MiB. */
  maxEventBytes?: number;
  /** Deepest JSON nesting of an event's `data` (`limits.ts` `jsonDepth`). Default 64. */
  maxJsonDepth?: number;
  /** Aborts the read; the iteration throws `signal.reason`. */
  signal?: AbortSignal;
  /** Label for error messages (usually the URL). */
  source?: string;
}

export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;
/**
 * 8 Mi characters. A2A puts whole artifacts in one event, and a `raw` part is
 * base64 inline, so events of a few MiB are legitimate; the cap bounds what one
 * connection can make us buffer (a broken or hostile peer never sending a blank
 * line) while leaving room for ~6 MiB of binary content per event.
 */
export const DEFAULT_MAX_EVENT_SIZE_CHARS = 8 * 1024 * 1024;

/** A read `ChunkReader.next` waits for: settled once, by the chunk, the watchdog or the abort. */
interface PendingRead<T> {
  resolve(result: IteratorResult<T>): void;
  reject(error: unknown): void;
}

/**
 * Reads `iterator` one chunk at a time, each wait bounded by `idleTimeoutMs` (0: no bound) and `signal`: `next`
 * rejects with `StreamIdleError` or the abort reason. A late chunk after such a rejection is dropped (no unhandled
 * rejection). Call `close` when done (it stops the watchdog and removes the abort listener).
 *
 * One watchdog timer and one abort listener per read, not per chunk: each `next` re-arms the timer
 * (`refresh()`); between chunks it may fire and then does nothing, since no read waits, and the next `next` arms
 * it again. Between chunks the timer does not hold the process open (`unref`), as no timer did before. A stream
 * of many small chunks (SSE events, keep-alives) made a timer, an abort listener and three closures per chunk.
 * An `idleTimeoutMs` past Node's timer range (`MAX_TIMER_DELAY_MS`: a held send stream's month-long time left) is
 * waited in hops of the same timer, as `setLongTimeout` does: a hop that ends with time left arms the next one, and
 * only a hop of another length than the timer's makes a new timer.
 */
export class ChunkReader<T> {
  private timer: NodeJS.Timeout | undefined;
  /** The delay `timer` was made with, ms: `refresh()` waits that long again. */
  private timerMs = 0;
  /** What the waiting read still has to wait after the current hop, ms (0 unless `idleTimeoutMs` passes the range). */
  private leftMs = 0;
  private pending: PendingRead<T> | undefined;
  private listening = false;
  private readonly onAbort = (): void => this.fail(this.signal?.reason);
  private readonly onTimer = (): void => {
    if (!this.pending) return;
    if (this.leftMs > 0) this.arm(this.leftMs);
    else this.fail(new StreamIdleError(`no bytes for ${this.idleTimeoutMs} ms from ${this.source}`));
  };

  constructor(
    private readonly iterator: AsyncIterator<T>,
    private readonly idleTimeoutMs: number,
    private readonly signal: AbortSignal | undefined,
    private readonly source: string,
  ) {}

  /** The next chunk, or `{ done: true }`; rejects with `StreamIdleError`, the abort reason or a `NetworkError`. */
  next(): Promise<IteratorResult<T>> {
    const { signal } = this;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (signal && !this.listening) {
      this.listening = true;
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
    if (this.idleTimeoutMs > 0) this.arm(this.idleTimeoutMs);
    return new Promise<IteratorResult<T>>((resolve, reject) => {
      const read: PendingRead<T> = { resolve, reject };
      this.pending = read;
      this.iterator.next().then(
        (result) => this.settle(read, () => resolve(result)),
        (error: unknown) => this.settle(read, () => reject(toNetworkError(error, this.source, signal))),
      );
    });
  }

  /** Stops the watchdog and removes the abort listener. */
  close(): void {
    clearTimeout(this.timer);
    if (this.listening) this.signal?.removeEventListener('abort', this.onAbort);
    this.listening = false;
  }

  /** Settles `read` if it is still the one waiting (not already rejected by the watchdog or the abort). */
  private settle(read: PendingRead<T>, settle: () => void): void {
    if (this.pending !== read) return;
    this.pending = undefined;
    this.timer?.unref();
    settle();
  }

  /**
   * Starts the wait of `waitMs` (> 0; Infinity: never ends): its first hop, at most `MAX_TIMER_DELAY_MS`, on the
   * timer (`refresh()` when the timer already has that length, else a new timer), the rest kept in `leftMs`.
   */
  private arm(waitMs: number): void {
    const hopMs = Math.min(waitMs, MAX_TIMER_DELAY_MS);
    this.leftMs = waitMs - hopMs;
    if (this.timer && this.timerMs === hopMs) {
      this.timer.ref().refresh();
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(this.onTimer, hopMs);
    this.timerMs = hopMs;
  }

  /** Rejects the waiting read, if any. */
  private fail(error: unknown): void {
    const read = this.pending;
    if (!read) return;
    this.pending = undefined;
    this.timer?.unref();
    read.reject(error);
  }
}

/** The limits of one read, defaults applied. */
interface SseLimits {
  maxEventBytes: number;
  /** At most `maxEventBytes`. */
  maxEventSizeChars: number;
  maxJsonDepth: number;
  source: string;
}

/**
 * Bytes to SSE messages for one connection: a streaming UTF-8 decoder, the BOM, the parser and the
 * size and depth caps. After each `chunk` (and `end`), `queue` holds the messages ready to hand out
 * and `failure` the first error, if any; nothing is parsed after a failure.
 */
class SseDecoder {
  readonly queue: SseMessage[] = [];
  failure: Error | undefined;
  // Bytes received since the last dispatched event: an event ending mid-chunk resets it, so it may
  // undercount by one chunk; the parser's character cap (≤ the byte cap) backs it up.
  private pendingBytes = 0;
  private lastEventId: string | undefined;
  // One streaming decoder per connection (R03): a character split across chunks is
  // held back, never replaced by U+FFFD. ignoreBOM:false lets it strip a leading BOM.
  // Line endings (LF, CRLF, CR, also split across chunks) are the parser's: eventsource-parser 4
  // dispatches an event ended by a lone CR at once (3.x held a trailing CR back until the next byte).
  private readonly decoder = new TextDecoder('utf-8');
  private seenText = false;
  private readonly parser: EventSourceParser;

  constructor(private readonly limits: SseLimits) {
    this.parser = createParser({
      maxBufferSize: limits.maxEventSizeChars,
      onEvent: (message) => this.onEvent(message),
      onComment: () => {
        this.pendingBytes = 0;
      },
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') this.failure ??= this.oversize();
      },
    });
  }

  /** Feeds one chunk of the body. */
  chunk(bytes: Uint8Array): void {
    this.pendingBytes += bytes.byteLength;
    this.feed(this.decoder.decode(bytes, { stream: true }));
    if (this.pendingBytes > this.limits.maxEventBytes) this.failure ??= this.oversize();
  }

  /** The body ended: flushes the decoder. Whatever the parser still buffers is an unterminated event, discarded (R04). */
  end(): void {
    this.feed(this.decoder.decode());
  }

  /**
   * For a whole body after `end` (`serverSentEventsOf`): dispatches the event left unterminated at its end, if any
   * (it stands in the body all the same), into `queue`; returns how many it dispatched (0 or 1; 0 after a failure).
   */
  terminate(): number {
    if (this.failure) return 0;
    const before = this.queue.length;
    this.parser.feed('\n\n');
    return this.queue.length - before;
  }

  private onEvent(message: EventSourceMessage): void {
    if (message.data.length > this.limits.maxEventSizeChars) this.failure ??= this.oversize();
    if (this.failure) return;
    this.pendingBytes = 0;
    try {
      checkJsonDepth(message.data, this.limits.maxJsonDepth);
    } catch (error) {
      this.failure ??= error as Error;
      return;
    }
    if (message.id !== undefined) this.lastEventId = message.id;
    const lastEventId = this.lastEventId;
    this.queue.push({ ...(message.event === undefined ? {} : { event: message.event }), data: message.data, ...(lastEventId === undefined ? {} : { lastEventId }) });
  }

  private feed(decoded: string): void {
    let text = decoded;
    // An empty decode (e.g. only `EF` of a BOM so far) must not reach the parser:
    // it would use up the parser's first-chunk BOM handling (R03).
    if (text === '') return;
    if (!this.seenText) {
      this.seenText = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (text !== '') this.parser.feed(text);
  }

  private oversize(): LimitExceededError {
    const { maxEventBytes, maxEventSizeChars, source } = this.limits;
    return new LimitExceededError('sseEventBytes', maxEventBytes, `SSE event larger than ${maxEventSizeChars} characters or ${maxEventBytes} bytes from ${source}`, { delivery: 'received' });
  }
}

/** A decoder under `options`' caps (defaults: `sseEventBytes`, `DEFAULT_MAX_EVENT_SIZE_CHARS`, `jsonDepth`). */
function sseDecoderFor(options: SseReaderOptions, source: string): SseDecoder {
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_A2A_LIMITS.sseEventBytes;
  return new SseDecoder({
    maxEventBytes,
    maxEventSizeChars: Math.min(options.maxEventSizeChars ?? DEFAULT_MAX_EVENT_SIZE_CHARS, maxEventBytes),
    maxJsonDepth: options.maxJsonDepth ?? DEFAULT_A2A_LIMITS.jsonDepth,
    source,
  });
}

/**
 * Reads SSE messages from `body` until EOF. Comments are skipped (they only
 * reset the watchdog). An unterminated last event at EOF is discarded, as the
 * SSE standard requires (field case R04). Throws `StreamIdleError`,
 * `LimitExceededError` (a `ProtocolError`: an event over `maxEventBytes` bytes or
 * `maxEventSizeChars` characters, or `data` nested deeper than `maxJsonDepth`;
 * reading stops there and the connection is closed), `NetworkError`, or the abort reason.
 * The body is destroyed when the generator finishes or is abandoned.
 */
export async function* readServerSentEvents(body: ByteBody, options: SseReaderOptions = {}): AsyncGenerator<SseMessage, void, void> {
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const source = options.source ?? 'stream';
  const events = sseDecoderFor(options, source);
  const { queue } = events;
  const chunks = new ChunkReader(body[Symbol.asyncIterator](), idleTimeoutMs, options.signal, source);
  try {
    for (;;) {
      const next = await chunks.next();
      if (next.done) break;
      events.chunk(next.value);
      if (events.failure) throw events.failure;
      while (queue.length > 0) yield queue.shift()!;
    }
    events.end();
    if (events.failure) throw events.failure;
    while (queue.length > 0) yield queue.shift()!;
  } finally {
    chunks.close();
    body.destroy?.();
  }
}

/** The SSE messages of a whole body (`serverSentEventsOf`). */
export interface WholeBodyEvents {
  /** The messages read, in order, up to the first that could not be read. */
  events: SseMessage[];
  /**
   * Why a frame after `events` could not be read (over the event size limit, or left unterminated at the body's end),
   * when one could not: a frame the body holds all the same, which may say otherwise than the ones before it (a caller
   * counts it as one more event).
   */
  unreadableAfter?: Error;
}

/** The slice of a whole body fed at a time (`serverSentEventsOf`): reading can stop after it once enough events were read. */
const WHOLE_BODY_SLICE_BYTES = 64 * 1024;

/**
 * The SSE messages of a whole body already read (`text`), in order, under the same size and depth caps as a stream's
 * (`SseReaderOptions`); no event when it holds none. Throws what `readServerSentEvents` throws for a bad event when
 * no event came before it; after one, the failure is `unreadableAfter` (never dropped: a body of a readable first
 * frame and an unreadable second is not a body of one event). `maxEvents` (default: all): reading stops once that many
 * were read, and at most that many are returned (a caller that needs the first event and whether there is another asks
 * for 2: a body within `responseBodyBytes` of tiny events would otherwise cost a worker some 14 bytes of heap per byte,
 * 230 MB for 16 MiB, and seconds of CPU).
 */
export function serverSentEventsOf(text: string, options: SseReaderOptions = {}, maxEvents = Number.POSITIVE_INFINITY): WholeBodyEvents {
  const events = sseDecoderFor(options, options.source ?? 'body');
  const bytes = new TextEncoder().encode(text);
  for (let at = 0; at < bytes.length && !events.failure && events.queue.length < maxEvents; at += WHOLE_BODY_SLICE_BYTES) {
    events.chunk(bytes.subarray(at, at + WHOLE_BODY_SLICE_BYTES));
  }
  if (events.queue.length >= maxEvents) return { events: events.queue.slice(0, maxEvents) };
  events.end();
  const complete = events.queue.length;
  // An event left unterminated after a complete one: not read (R04), but no body of one event either.
  const unterminated = complete > 0 && events.terminate() > 0;
  if (complete === 0 && events.failure) throw events.failure;
  const unreadableAfter = events.failure ?? (unterminated ? new ProtocolError(`an SSE event left unterminated at the end of the ${options.source ?? 'body'}`, { delivery: 'received' }) : undefined);
  return { events: events.queue.slice(0, complete), ...(unreadableAfter ? { unreadableAfter } : {}) };
}

/** Reads a whole (small) body as text, keeping at most `limitBytes`, under the same idle watchdog. */
export async function readBodyText(body: ByteBody, options: SseReaderOptions & { limitBytes?: number } = {}): Promise<string> {
  const limitBytes = options.limitBytes ?? 64 * 1024;
  const chunks = new ChunkReader(body[Symbol.asyncIterator](), options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, options.signal, options.source ?? 'body');
  // The bytes are kept and decoded once at the end (`utf8TextOf`: the text a streaming decoder gives, without one per body).
  const read: Uint8Array[] = [];
  let bytes = 0;
  try {
    for (;;) {
      const next = await chunks.next();
      if (next.done) break;
      bytes += next.value.byteLength;
      read.push(next.value);
      if (bytes >= limitBytes) break;
    }
    return utf8TextOf(read, bytes);
  } finally {
    chunks.close();
    body.destroy?.();
  }
}
