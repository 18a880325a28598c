/**
 * Journal refusals as typed errors. The codes and their meanings are one table, `SCRIPT_CODES` (script-codes.ts);
 * each script's `defineScript` decoder names the code it got, and the journal method throws it as a `JournalError`
 * with a stable `code` that tests match.
 */
import type { ScriptCode } from './script-codes.ts';
import type { Refused } from './scripts.ts';

/** A refusal a journal method throws (every script code but the one the journal handles itself). */
export type JournalErrorCode = Exclude<ScriptCode, 'TASK_NOT_BOUND'>;

/**
 * A journal transition was refused. `FENCE_LOST` means another worker took the
 * delegation over: the caller must stop without writing anything else.
 * `TASK_BOUND_ELSEWHERE`: the agent named a task id already bound to another delegation
 * (journaled on this one as a protocol error; the reconciler decides). `ARTIFACT_LIMIT`:
 * the delegation's artifacts would exceed `artifactBytesPerDelegation` (the attempt ended).
 */
export class JournalError extends Error {
  override readonly name = 'JournalError';
  constructor(
    readonly code: JournalErrorCode,
    readonly ref: { workflowId: string; delegationId: string },
    readonly operation: string,
  ) {
    super(`${operation} refused for ${ref.workflowId}/${ref.delegationId}: ${code}`);
  }
}

/** Codes the journal handles itself, never thrown as a `JournalError`. */
const HANDLED: ReadonlySet<ScriptCode> = new Set(['TASK_NOT_BOUND']);

/**
 * `result` unless it is a refusal, which is thrown as a `JournalError` for `operation` on `ref`.
 * @throws JournalError; Error for a code the journal handles itself (its caller should have)
 */
export function unlessRefused<Result>(result: Result | Refused, ref: { workflowId: string; delegationId: string }, operation: string): Exclude<Result, Refused> {
  if (typeof result !== 'object' || result === null || !('refused' in result)) return result as Exclude<Result, Refused>;
  const { refused } = result as Refused;
  if (HANDLED.has(refused)) throw new Error(`${operation}: ${refused} reached the caller`);
  throw new JournalError(refused as JournalErrorCode, ref, operation);
}
