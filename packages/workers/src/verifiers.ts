/**
 * Verifiers: independent read paths (a booking system, a ledger, a mail log)
 * registered by name in the workers. Never a question to the same agent.
 */
import type { DelegationView } from '@durable-a2a/shared';

/** present: the side effect exists; absent: it does not; unknown: the read path could not tell. */
export type Effect = 'present' | 'absent' | 'unknown';

export interface Verification {
  effect: Effect;
  /** What the read path returned, kept in the journal for people. */
  evidence: unknown;
}

/** A verifier plugin. Throwing means "could not check now": the verify job retries with backoff. */
export interface Verifier {
  verify(input: { delegation: DelegationView; params: Record<string, unknown> }): Promise<Verification>;
}

export type VerifierRegistry = ReadonlyMap<string, Verifier>;
