/**
 * A step's delegation row for the pure core's property tests: our messageId `M-ours`, the context we sent `C-ours`,
 * sent (marked) and not yet bound, no send proven absent, version 7 under fence 2; `extra` replaces or adds fields.
 */
import type { DelegationRecord } from '@durable-a2a/shared';
import type { Policy } from '../src/delegation/core/policy.ts';

/** Our messageId on the row (`stepRow`'s, and the foreign-holder properties' "message of ours"). */
export const OURS = 'M-ours';
/** The messageId of a reply to the agent's question, journaled by us (the foreign-holder properties). */
export const REPLY = 'R-ours';

/**
 * The policy the foreign-holder properties hand the pure core (`transition`): now 5 000 000 ms, 3 send attempts, 3
 * unacceptable answers, a reconcile every 30 s; the rest unset (the rows they judge never read it).
 */
export const holderPolicy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3, unacceptableAnswerLimit: 3, reconcileIntervalMs: 30_000 } as unknown as Policy;

export const stepRow = (extra: Record<string, unknown> = {}): DelegationRecord =>
  ({
    workflowId: 'wf',
    delegationId: 'main.1',
    step: 'main',
    kind: 'step',
    messageId: OURS,
    requestedContextId: 'C-ours',
    contextRefused: false,
    state: 'INTENT',
    message: { parts: [{ text: 'book' }] },
    createdAt: 4_000_000,
    sendStartedAt: 4_900_000,
    resendCount: 0,
    provenAbsentSends: 0,
    version: 7,
    fence: 2,
    ...extra,
  }) as unknown as DelegationRecord;
