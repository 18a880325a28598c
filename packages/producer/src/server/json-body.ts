/**
 * The API's one JSON body parser: nesting is checked on the text before `JSON.parse` (RT7, F34), against the same
 * `jsonDepth` the workers accept back from agents (default 64), so a body the workers would refuse in an agent's
 * echo of our message is refused here, with 400, before anything is journaled; never a 500 from a deep value.
 */
import { LimitExceededError, checkJsonDepth } from '@durable-a2a/a2a';

/**
 * Levels an agent's answer adds around what we sent, beyond our own body's one: JSON-RPC `result`, `task`,
 * `history`, the array, the message, then our `metadata` (6), against our body's 1. The API accepts bodies nested
 * at most `jsonDepth - ECHO_DEPTH_MARGIN` levels, so the deepest echo of our message stays within `jsonDepth`.
 */
export const ECHO_DEPTH_MARGIN = 5;

/**
 * The largest API body, in bytes (1 MiB; 413 PAYLOAD_TOO_LARGE past it). Well within what the workers read back in
 * an agent's echo of our message: an SSE event (`sseEventBytes`, 8 MiB) and an answer (`responseBodyBytes`, 16 MiB).
 */
export const API_BODY_LIMIT_BYTES = 1024 * 1024;

/** The deepest API body accepted for a workers' `jsonDepth` (default 64 → 59). */
export const apiBodyDepth = (jsonDepth: number): number => Math.max(8, jsonDepth - ECHO_DEPTH_MARGIN);

/**
 * Parses `body` as JSON within `jsonDepth` levels of nesting. Throws an error with `statusCode` 400 (the problem
 * handler's `BAD_REQUEST`): the limit's message when it is too deep, `<what> is not JSON` otherwise.
 */
export function parseJsonWithinDepth(body: string | Buffer, jsonDepth: number, what = 'body'): unknown {
  try {
    checkJsonDepth(String(body), jsonDepth);
    return JSON.parse(String(body));
  } catch (error) {
    // A body over the depth limit keeps the limit's error as its cause (the push webhook journals it as refused).
    if (error instanceof LimitExceededError) throw Object.assign(new Error(error.message, { cause: error }), { statusCode: 400 });
    throw Object.assign(new Error(`${what} is not JSON`), { statusCode: 400 });
  }
}

/** A fastify content-type parser (`parseAs: 'string'`) that parses with `parseJsonWithinDepth`. */
export const depthCheckedJsonParser =
  (jsonDepth: number, what?: string) =>
  (_request: unknown, body: string | Buffer, done: (error: Error | null, value?: unknown) => void): void => {
    let parsed: unknown;
    try {
      parsed = parseJsonWithinDepth(body, jsonDepth, what);
    } catch (refused) {
      return done(refused as Error, undefined);
    }
    done(null, parsed);
  };
