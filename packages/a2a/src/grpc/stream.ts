/**
 * Following a gRPC server stream (SendStreamingMessage, SubscribeToTask; spec
 * §10, §3.1.6) with the same contract as SSE (`stream.ts`): events are decoded
 * and validated one by one, the same `StreamEndTracker` decides how the stream
 * ended (terminal / interrupted / incomplete), the same idle watchdog
 * (`ChunkReader`) bounds the wait for the next message, and an idle stream that
 * already reached a terminal or interrupted state ends normally. A non-OK status
 * is thrown as the typed error of `status-table.ts`. The size cap is the channel's
 * `grpc.max_receive_message_length` (see `channel.ts`).
 */
import type { ClientReadableStream } from '@grpc/grpc-js';
import { StreamIdleError } from '../errors.ts';
import { ChunkReader, DEFAULT_IDLE_TIMEOUT_MS } from '../sse.ts';
import type { StreamResponse } from '../schema.ts';
import { StreamEndTracker } from '../stream.ts';
import type { EventStream, StreamEvent } from '../transport.ts';
import { errorFromGrpc, isServiceError } from './status-table.ts';

export interface GrpcStreamOptions {
  /** Longest wait for the next message. 0 disables. Default 60_000. */
  idleTimeoutMs?: number;
  /** Aborts the call; the iteration throws `signal.reason`. */
  signal?: AbortSignal;
  /** Label for error messages (the interface URL). */
  source: string;
  /** Our channel's `grpc.max_receive_message_length` in bytes (tells our size cap from the server's, `errorFromGrpc`). */
  receiveCapBytes?: number;
  /** Our request message's length in bytes (tells the server's refusal of our request, `errorFromGrpc`). */
  requestBytes?: number;
}

/**
 * The call's messages; a failed status becomes its typed error. Once a message arrived the server had our request
 * (its handler answered), so a later size error is never its refusal of our request (no `requestBytes` then).
 */
async function* messagesOf(call: ClientReadableStream<Buffer>, options: GrpcStreamOptions): AsyncGenerator<Buffer, void, void> {
  let answered = false;
  try {
    for await (const chunk of call) {
      answered = true;
      yield chunk as Buffer;
    }
  } catch (error) {
    throw isServiceError(error) ? errorFromGrpc(error, options.source, options.receiveCapBytes, answered ? undefined : options.requestBytes) : error;
  }
}

/**
 * Iterates a started server-streaming call. `decode` turns one message into a
 * validated `StreamResponse` (and throws the typed error for a bad one). The
 * call is cancelled when the iteration stops early, fails or is abandoned.
 */
export async function* followGrpcStream(
  call: ClientReadableStream<Buffer>,
  decode: (bytes: Buffer) => StreamResponse,
  options: GrpcStreamOptions,
): EventStream {
  const tracker = new StreamEndTracker();
  const messages = messagesOf(call, options);
  const chunks = new ChunkReader(messages, options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, options.signal, options.source);
  try {
    for (;;) {
      const next = await chunks.next();
      if (next.done) break;
      const event: StreamEvent = { response: decode(next.value) };
      tracker.observe(event);
      yield event;
    }
  } catch (error) {
    if (error instanceof StreamIdleError && tracker.kind() !== 'incomplete') return tracker.end();
    throw error;
  } finally {
    chunks.close();
    call.cancel();
  }
  return tracker.end();
}
