/**
 * Where an answer's bytes have arrived, every failure to process them is the agent's answer's fault, typed as an A2A
 * error with delivery `received` (docs/a2a-edge.md "Limits"): never an error outside the A2A error model, which a
 * caller would read as "nothing came back" (a RangeError from a value nested past the stack, a TypeError from a shape
 * no schema foresaw). Before the answer arrived (building our request) an error stays what it is.
 */
import { A2AError, LimitExceededError, ProtocolError, withDelivery } from './errors.ts';
import { DEFAULT_A2A_LIMITS } from './limits.ts';

/**
 * True for an error the JavaScript runtime raises on a value it was given (`RangeError`, `TypeError`, `SyntaxError`,
 * `URIError`) or a zod schema's own `ZodError`: what processing an answer's content throws. Redis, network and
 * journal errors are none of these (they are `Error` subclasses of their own), so a caller that also does I/O can tell
 * the answer's fault from its own infrastructure's.
 */
export function isRuntimeFault(error: unknown): error is Error {
  if (error instanceof A2AError) return false;
  return error instanceof RangeError || error instanceof TypeError || error instanceof SyntaxError || error instanceof URIError || (error instanceof Error && error.name === 'ZodError');
}

/**
 * `error`, thrown while processing an answer that arrived (`what` names it), as an A2A error with delivery `received`:
 * an A2A error keeps its class; a `RangeError` is `LimitExceededError('jsonDepth', maxDepth)` (the byte limits bound
 * an answer's size, so what a bounded answer can exhaust is the call stack: its nesting); anything else a
 * `ProtocolError` naming what failed. The original error is the `cause`.
 */
export function answerFault(error: unknown, what: string, maxDepth: number = DEFAULT_A2A_LIMITS.jsonDepth): A2AError {
  if (error instanceof A2AError) return withDelivery(error, 'received');
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  if (error instanceof RangeError) return new LimitExceededError('jsonDepth', maxDepth, `${what} could not be processed (${detail}): nested deeper than a worker can process`, { delivery: 'received', cause: error });
  return new ProtocolError(`${what} could not be processed (${detail})`, { delivery: 'received', cause: error });
}

/**
 * Runs `decode` on an answer that arrived and returns what it returns; whatever it throws is thrown as `answerFault`
 * gives it (an A2A error, delivery `received`). For the bindings' reading of a response once `http.request` returned.
 */
export function readingAnswer<T>(what: string, decode: () => T, maxDepth?: number): T {
  try {
    return decode();
  } catch (error) {
    throw error instanceof A2AError ? error : answerFault(error, what, maxDepth);
  }
}
