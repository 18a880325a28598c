/**
 * One SSE answer of the fuzz agent (SubscribeToTask or SendStreamingMessage,
 * spec §3.1.6 and §9.4): the honest event list, then the behaviour's stream
 * deviations (foreign events, reordering, oversized events, shapes, record
 * separators, an early FIN, keep-alive-only).
 */
import type { ServerResponse } from 'node:http';
import { chunkBytes, expand, firstHalf, hugeArtifact, writeChunks, type Chunk } from './body.ts';
import { deviationOf, type Behaviour, type Deviation, type EventOp } from './grammar.ts';

type Oversized = Extract<Deviation, { kind: 'oversized' }>;
import { decoyTask, type Timed } from './answers.ts';
import { answerId, foreignEvents, foreignTask, shapeEvent, speller, streamEvents, type AgentTask, type StreamPayload } from './wire.ts';

export interface StreamRequest {
  runId: string;
  behaviour: Behaviour;
  task: AgentTask;
  response: ServerResponse;
  /** The JSON-RPC id of the request. */
  id: unknown;
  /** 1-based count of streams of this method so far (early FIN applies to the first ones). */
  streamNumber: number;
  /** The method that opened the stream. */
  site: 'SubscribeToTask' | 'SendStreamingMessage';
  /** Our task as the agent would answer GetTask now. */
  snapshot: () => Record<string, unknown>;
  /** True once the agent is closing: keep-alive loops stop. */
  closed: () => boolean;
  /** Called with each event once its frame was written whole (what the client could have read). */
  onEventSent?: (payload: StreamPayload) => void;
}

/** Upper bound on keep-alive comments per stream (the agent's close ends it sooner). */
const MAX_KEEP_ALIVES = 10_000;

/** Serves one stream; resolves with the bytes written once it ends (or the client went away). */
export async function serveStream(request: StreamRequest): Promise<number> {
  const { behaviour, response } = request;
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  response.flushHeaders();
  const { events, frames } = framedEvents(request);
  let bytes = 0;
  const send = async (chunks: Chunk[]) => {
    bytes += chunkBytes(chunks);
    return writeChunks(response, chunks);
  };

  const keepAlive = deviationOf(behaviour, 'keepAliveOnly');
  if (keepAlive) {
    if (keepAlive.afterSnapshot) {
      if (!(await send(frames[0]!))) return bytes;
      request.onEventSent?.(events[0]!.payload);
    }
    for (let count = 0; count < MAX_KEEP_ALIVES && !request.closed() && !response.destroyed; count++) {
      if (!(await send([':\n\n']))) return bytes;
      await sleep(keepAlive.intervalMs);
    }
    return bytes;
  }

  const earlyFin = deviationOf(behaviour, 'earlyFin');
  const cut = earlyFin && request.streamNumber <= earlyFin.streams ? earlyFin : undefined;
  // Connection recycling: the snapshot and `cutAfterUpdates` updates, then the connection ends.
  const recycling = deviationOf(behaviour, 'recycling');
  const limit = cut ? cut.afterEvents : recycling ? 1 + recycling.cutAfterUpdates : frames.length;
  const count = Math.min(limit, frames.length);
  for (let index = 0; index < count; index++) {
    await sleep(Math.max(0, events[index]!.atMs - Date.now()));
    if (request.closed() || !(await send(frames[index]!))) return bytes;
    request.onEventSent?.(events[index]!.payload);
  }
  if (cut?.midEvent && count < frames.length) await send([firstHalf(frames[count]!)]);
  if (!response.destroyed) response.end();
  return bytes;
}

/** The events of this stream (each with the instant it is due), deviations applied, and each as the bytes of one SSE event. */
function framedEvents(request: StreamRequest): { events: Timed<StreamPayload>[]; frames: Chunk[][] } {
  const { runId, behaviour, task } = request;
  const now = Date.now();
  let events = streamEvents(runId, task, behaviour, now);
  const at = (payload: StreamPayload): Timed<StreamPayload> => ({ atMs: now, payload });
  const foreign = deviationOf(behaviour, 'foreignTask')?.where;
  if (foreign === 'stream') events.splice(1, 0, ...foreignEvents(runId, behaviour).map(at));
  // The answer to a streaming send opens with another client's task (foreignTask at 'send').
  if (foreign === 'send' && request.site === 'SendStreamingMessage') events.unshift(at({ task: foreignTask(runId, behaviour) }));
  // Another request's id on this stream: its first event is a decoy claiming our context and message.
  const envelope = deviationOf(behaviour, 'envelopeId');
  if (envelope?.site === request.site && envelope.id === 'other') events.unshift(at({ task: decoyTask(runId, task, speller(behaviour)('FAILED')) }));
  const huge = hugeOf(behaviour, request);
  if (huge && (events.length > 1 || deviationOf(behaviour, 'overLimitAnswer'))) {
    const big = { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: hugeArtifact(huge), append: false, lastChunk: true } };
    // Before the final status; after a finished task's snapshot when that is all the stream has.
    events.splice(Math.max(1, events.length - 1), 0, { atMs: events.at(-1)!.atMs, payload: big });
  }
  events = reorder(events, deviationOf(behaviour, 'eventOrder')?.ops ?? []);
  const separator = deviationOf(behaviour, 'recordSeparator')?.scope;
  const frames = events.map(({ payload }, index) => {
    const envelope = { jsonrpc: '2.0', id: answerId(request.id, behaviour, request.site), result: shapeEvent(payload, behaviour, request.snapshot) };
    const prefix = separator === 'all' || (separator === 'first' && index === 0) ? 'data: \x1E' : 'data: ';
    return [prefix, ...expand(JSON.stringify(envelope), huge), '\n\n'];
  });
  return { events, frames };
}

/** The over-limit value this stream carries: `oversized` off the card, or an answer over a limit on the follow path (or a send stream's first answer). */
function hugeOf(behaviour: Behaviour, request: StreamRequest): Oversized | undefined {
  const oversized = deviationOf(behaviour, 'oversized');
  if (oversized && oversized.where !== 'card') return oversized;
  const answer = deviationOf(behaviour, 'overLimitAnswer');
  if (!answer || (answer.path === 'send' && (request.site !== 'SendStreamingMessage' || request.streamNumber > 1))) return undefined;
  return { kind: 'oversized', where: 'streamEvent', shape: answer.shape, amount: answer.amount };
}

/** Applies duplicate / drop / swap operations in order; indexes wrap around the current length. */
export function reorder<T>(events: T[], ops: EventOp[]): T[] {
  const result = [...events];
  for (const op of ops) {
    if (result.length === 0) break;
    const index = op.index % result.length;
    if (op.op === 'duplicate') result.splice(index, 0, result[index]!);
    else if (op.op === 'drop') result.splice(index, 1);
    else if (op.op === 'swap') {
      const other = op.with % result.length;
      [result[index], result[other]] = [result[other]!, result[index]!];
    }
  }
  return result;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
