/**
 * Journal script return codes → typed errors, in one table (the BullMQ
 * `error-code.ts` pattern). Each carries a stable `code` that tests match.
 */

/** Negative script codes and what they mean. */
export const JOURNAL_ERROR_CODES = {
  [-1]: 'DELEGATION_MISSING',
  [-2]: 'FENCE_LOST',
  [-3]: 'VERSION_CONFLICT',
  [-4]: 'WRONG_STATE',
  [-5]: 'TASK_MISMATCH',
  [-6]: 'MAY_HAVE_SENT',
  [-7]: 'TASK_BOUND_ELSEWHERE',
  [-8]: 'ARTIFACT_LIMIT',
} as const;
export type JournalErrorCode = (typeof JOURNAL_ERROR_CODES)[keyof typeof JOURNAL_ERROR_CODES];

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

/** Builds the error for a negative script code. */
export function journalErrorFromCode(code: number, ref: { workflowId: string; delegationId: string }, operation: string): JournalError {
  const name = JOURNAL_ERROR_CODES[code as keyof typeof JOURNAL_ERROR_CODES];
  if (!name) throw new Error(`unknown journal script code ${code} from ${operation}`);
  return new JournalError(name, ref, operation);
}
