/**
 * Opening and following an A2A event stream (spec §3.1.2, §3.1.6, §9.4, §11.7):
 * branch on Content-Type before parsing (field case R08), decode each SSE
 * message with the binding's decoder, and report how the stream ended.
 */
import { type A2AError, LimitExceededError, ProtocolError, StreamIdleError, inStreamFrame } from './errors.ts';
import { excerpt, isJsonMediaType, mediaType } from './error-mapping.ts';
import type { HttpStreamResponse } from './http.ts';
import { isInterruptedTaskState, isTerminalTaskState, type StreamResponse, type TaskState } from './schema.ts';
import { readBodyText, readServerSentEvents, type SseMessage, type SseReaderOptions } from './sse.ts';
import type { CallOptions, EventStream, StreamEnd, StreamEvent, TransportOptions } from './transport.ts';
import { checkJsonDepth, DEFAULT_A2A_LIMITS, resolveLimits } from './limits.ts';
import { readingAnswer } from './answer-fault.ts';

/** Turns one SSE message into a `StreamResponse`; throws the typed error an error event carries. */
export type StreamEventDecoder = (message: SseMessage) => StreamResponse;
/** Turns a non-SSE answer to a stream request (any status) into the typed error it carries. */
export type StreamErrorDecoder = (status: number, contentType: string | undefined, bodyText: string) => A2AError;

/**
 * Reads a JSON answer to a stream request (a server that answers the streaming method as the plain one, whatever
 * the HTTP status) as the stream's one event, when the answer is our success envelope; `undefined` (not a success
 * envelope, or not proven ours) leaves it to the `StreamErrorDecoder`. Throws what decoding our result throws.
 */
export type StreamAnswerDecoder = (bodyText: string) => StreamResponse | undefined;

/** Options of one stream: the SSE reader's (`idleTimeoutMs` default 60_000, size caps, abort signal, source label). */
export type EventStreamOptions = SseReaderOptions;

/** A transport's stream options from its `TransportOptions` (idle watchdog, event size and depth limits). */
export function streamOptionsOf(options: TransportOptions, source: string): EventStreamOptions {
  const limits = resolveLimits(options.limits);
  return {
    idleTimeoutMs: options.idleTimeoutMs,
    maxEventSizeChars: options.maxEventSizeChars,
    maxEventBytes: limits.sseEventBytes,
    maxJsonDepth: limits.jsonDepth,
    source,
  };
}

/** A call's own idle timeout for its stream (`CallOptions.idleTimeoutMs`), when it gives one. */
export const idleOf = (options: CallOptions | undefined): { idleTimeoutMs?: number } =>
  options?.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: options.idleTimeoutMs };

/** The task state a stream event reports, if any (artifact updates report none). */
export function stateOf(response: StreamResponse): TaskState | undefined {
  if ('task' in response) return response.task.status.state;
  if ('statusUpdate' in response) return response.statusUpdate.status.state;
  return undefined;
}

/** Folds events into a `StreamEnd`. A direct `message` reply with no task counts as terminal (spec §3.1.2: one message, then close). */
export class StreamEndTracker {
  private lastState: TaskState | undefined;
  private lastEventId: string | undefined;
  private eventCount = 0;
  private messageReply = false;

  observe(event: StreamEvent): void {
    this.eventCount++;
    if (event.eventId !== undefined) this.lastEventId = event.eventId;
    const state = stateOf(event.response);
    if (state !== undefined) this.lastState = state;
    if ('message' in event.response) this.messageReply = true;
  }

  kind(): StreamEnd['kind'] {
    if (this.lastState === undefined) return this.messageReply ? 'terminal' : 'incomplete';
    if (isTerminalTaskState(this.lastState)) return 'terminal';
    if (isInterruptedTaskState(this.lastState)) return 'interrupted';
    return 'incomplete';
  }

  end(): StreamEnd {
    return {
      kind: this.kind(),
      eventCount: this.eventCount,
      ...(this.lastState === undefined ? {} : { lastState: this.lastState }),
      ...(this.lastEventId === undefined ? {} : { lastEventId: this.lastEventId }),
    };
  }
}

/**
 * Follows an opened stream response. Only `text/event-stream` with a 2xx status
 * is parsed as a stream; a JSON answer that `decodeAnswer` reads as our success
 * envelope is the stream's one event (bounded as one event: `sseEventBytes`, `jsonDepth`);
 * any other answer is read (up to 64 KiB) and thrown as the typed error it carries: a JSON error envelope gives its A2A error (R08 a), other
 * content gives a `ProtocolError` with an excerpt (R08 d). Never an empty success.
 *
 * The stream is left to the server to close (spec §11.7: it MAY resend a final
 * Task after the terminal update). If the idle watchdog fires after a terminal or
 * interrupted state was seen, the stream ends normally instead of throwing
 * `StreamIdleError`: nothing more was owed.
 */
export async function* followEventStream(
  response: HttpStreamResponse,
  decodeEvent: StreamEventDecoder,
  decodeError: StreamErrorDecoder,
  options: EventStreamOptions = {},
  decodeAnswer?: StreamAnswerDecoder,
): EventStream {
  const type = mediaType(response.contentType);
  const isSuccess = response.status >= 200 && response.status < 300;
  if (!isSuccess || type !== 'text/event-stream') {
    const asAnswer = isJsonMediaType(response.contentType) ? decodeAnswer : undefined;
    // A whole answer in place of a stream is held to one event's bounds, as its one event would be.
    const limitBytes = asAnswer ? (options.maxEventBytes ?? DEFAULT_A2A_LIMITS.sseEventBytes) + 1 : undefined;
    const bodyText = await readBodyText(response.body, { ...options, ...(limitBytes === undefined ? {} : { limitBytes }) });
    if (asAnswer && limitBytes !== undefined && Buffer.byteLength(bodyText) >= limitBytes) {
      throw new LimitExceededError('sseEventBytes', limitBytes - 1, `a JSON answer to a stream request is larger than ${limitBytes - 1} bytes`, { delivery: 'received' });
    }
    // Every body read here may be parsed (as the answer, or as an error body by `decodeError` whatever its content
    // type): each is held to `jsonDepth`, whatever its leading bytes; reading it is the answer's fault from here on.
    const maxDepth = options.maxJsonDepth ?? DEFAULT_A2A_LIMITS.jsonDepth;
    checkJsonDepth(bodyText, maxDepth);
    const answered = readingAnswer('a whole answer to a stream request', () => asAnswer?.(bodyText), maxDepth);
    if (answered !== undefined) {
      const tracker = new StreamEndTracker();
      const event: StreamEvent = { response: answered };
      tracker.observe(event);
      yield event;
      return tracker.end();
    }
    if (!isSuccess || type === 'application/json' || type.endsWith('+json')) {
      throw readingAnswer('an error answer to a stream request', () => decodeError(response.status, response.contentType, bodyText), maxDepth);
    }
    throw new ProtocolError(`expected text/event-stream, got ${response.contentType ?? 'no content type'}`, {
      httpStatus: response.status,
      cause: bodyText,
      bodyExcerpt: excerpt(bodyText),
    });
  }

  const tracker = new StreamEndTracker();
  try {
    for await (const message of readServerSentEvents(response.body, options)) {
      const event: StreamEvent = {
        response: readingAnswer('a stream event', () => decodedFrame(decodeEvent, message), options.maxJsonDepth),
        ...(message.lastEventId === undefined ? {} : { eventId: message.lastEventId }),
      };
      tracker.observe(event);
      yield event;
    }
  } catch (error) {
    if (error instanceof StreamIdleError && tracker.kind() !== 'incomplete') return tracker.end();
    throw error;
  }
  return tracker.end();
}

/** One frame decoded; an error the frame carries is marked as reported in a stream frame (`inStreamFrame`). */
function decodedFrame(decodeEvent: StreamEventDecoder, message: SseMessage): StreamResponse {
  try {
    return decodeEvent(message);
  } catch (error) {
    throw inStreamFrame(error);
  }
}

/**
 * Consumes a whole stream, calling `onEvent` for each event (awaited, in order),
 * and resolves to how it ended. Rejects with whatever the stream or `onEvent` throws.
 */
export async function drainStream(
  stream: EventStream,
  onEvent: (event: StreamEvent) => void | Promise<void>,
): Promise<StreamEnd> {
  try {
    for (;;) {
      const next = await stream.next();
      if (next.done) return next.value;
      await onEvent(next.value);
    }
  } catch (error) {
    // Release the connection if `onEvent` threw mid-stream (a no-op if the stream threw).
    await stream.return({ kind: 'incomplete', eventCount: 0 }).catch(() => undefined);
    throw error;
  }
}
