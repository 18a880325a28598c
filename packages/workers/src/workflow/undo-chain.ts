/**
 * workflow/undo-chain: the next move of a workflow's compensation chain, a pure function of the journal
 * (the steps, every attempt and compensation, the workflow row's lists). `compensation.ts` applies it.
 * A compensation a person sent back (`retryApproved`, `producer.resolve('retry')`) is superseded by a
 * new one (`<step>.<attempt>.undo-<n>`, new messageId); one a person gave up (`abandonedCompensations`,
 * `producer.resolve('abandon')`) is skipped and its original's effect named as left in place: the chain
 * never surfaces the same failed compensation twice.
 */
import { declaredVerifier, delegationIdOf, isUnsuccessful, needsUndo, type DelegationRecord, type Step } from '@durable-a2a/shared';

/**
 * The attempts to undo, last done first: steps in reverse order, attempts in reverse order. `retryApproved`:
 * AMBIGUOUS attempts a person sent back (they count as without effect, as in `decide`).
 */
export function undoPlan(steps: Step[], records: DelegationRecord[], retryApproved: readonly string[] = []): { step: Step; original: DelegationRecord }[] {
  const plan: { step: Step; original: DelegationRecord }[] = [];
  for (const step of [...steps].reverse()) {
    const attempts = records.filter((record) => record.kind === 'step' && record.step === step.name).sort((a, b) => b.attempt - a.attempt);
    for (const original of attempts) {
      const view = { ...original, error: original.error, effect: original.effect, retryApproved: retryApproved.includes(original.delegationId) };
      if (needsUndo(view, step)) plan.push({ step, original });
    }
  }
  return plan;
}

/** Every compensation journaled for a step attempt, found by its kind, step and attempt (never by its id's spelling). */
function compensationsOf(records: DelegationRecord[], original: DelegationRecord): DelegationRecord[] {
  return records.filter((record) => record.kind === 'compensation' && record.step === original.step && record.attempt === original.attempt);
}

/** The compensation that counts for a step attempt: the one no person sent back (`retryApproved`), if journaled. */
export function compensationOf(records: DelegationRecord[], original: DelegationRecord, retryApproved: readonly string[] = []): DelegationRecord | undefined {
  return compensationsOf(records, original).find((record) => !retryApproved.includes(record.delegationId));
}

/** The workflow row's lists the chain reads. */
export interface UndoLists {
  retryApproved: readonly string[];
  abandonedCompensations: readonly string[];
}

/** The chain's next move. `done`: nothing left to undo; `leftInPlace` names the effects a person chose to leave. */
export type UndoMove =
  | { kind: 'start'; step: Step; original: DelegationRecord; undoAttempt: number; delegationId: string }
  | { kind: 'verifying' | 'waiting'; delegationId: string }
  | { kind: 'failed'; reason: string; record: DelegationRecord }
  | { kind: 'done'; leftInPlace: string[] };

/** The next move of the compensation chain (last effect first), from the journal alone. */
export function nextUndo(steps: Step[], records: DelegationRecord[], lists: UndoLists): UndoMove {
  const leftInPlace: string[] = [];
  for (const { step, original } of undoPlan(steps, records, lists.retryApproved)) {
    const existing = compensationOf(records, original, lists.retryApproved);
    if (!existing) {
      const undoAttempt = compensationsOf(records, original).length + 1;
      return { kind: 'start', step, original, undoAttempt, delegationId: delegationIdOf('compensation', step.name, original.attempt, undoAttempt) };
    }
    const delegationId = existing.delegationId;
    if (lists.abandonedCompensations.includes(delegationId)) {
      const why = existing.error?.message ? `: ${existing.error.message}` : '';
      leftInPlace.push(`${original.delegationId} left in place: a person abandoned its compensation ${delegationId} (${existing.state}${why}); its effect (${original.effect ?? original.state}) is not undone`);
      continue;
    }
    if (existing.state === 'COMPLETED') {
      const verified = declaredVerifier(step, 'compensation') !== undefined;
      if (verified && existing.effect === undefined) return { kind: 'verifying', delegationId };
      if (verified && existing.effect !== 'absent') {
        return { kind: 'failed', reason: `${delegationId} completed but the effect of ${original.delegationId} is still ${existing.effect}`, record: existing };
      }
      continue; // undone; next one back
    }
    if (isUnsuccessful(existing.state) || existing.state === 'AMBIGUOUS') {
      return { kind: 'failed', reason: `${delegationId} ended ${existing.state}: ${existing.error?.message ?? 'no reason'}`, record: existing };
    }
    return { kind: 'waiting', delegationId }; // in flight; its settle re-enqueues the chain
  }
  return { kind: 'done', leftInPlace };
}
