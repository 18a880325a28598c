/**
 * The reconciler's cheap check of a running workflow (its index entry `<workflowId>|*`, looked at every 15–45 s while
 * its steps run): the last "wait" decision is remembered per workflow with the versions it was decided at (the
 * workflow row's, its delegation list's length, each delegation row's), and a check that reads the same versions
 * (`Journal.workflowVersions`: one round trip, nothing parsed) decides "wait" again without reading the rows. Any
 * version that moved (a step settled, a person resolved, an intent journaled), a row missing, or nothing remembered:
 * the full read and decision (`advanceWorkflow`), as before.
 *
 * Why the same versions give the same decision: `decide` is a pure function of the workflow row (definition, state,
 * cancelRequested, stopping, retryApproved) and its delegation rows (state, taskId, error, effect, held, …), with no
 * clock; every journal script that changes one of those fields bumps its row's version, and the delegation list
 * grows only with a workflow version bump (createIntent-4.lua); packages/shared/test/decision-versions.test.ts holds
 * the scripts to it. A definition with a step that names a skill also decides from the registry (its candidates):
 * never remembered. Only a RUNNING workflow's "wait" is remembered: the other states' checks do more than decide.
 */
import type { WorkflowDefinition } from '@durable-a2a/shared';
import type { WorkerContext } from '../context.ts';
import type { LoadedWorkflow } from './advance.ts';

/** Workflows whose last "wait" is remembered at most (the oldest go first): about 200 bytes each. */
export const WAITS_KEPT = 50_000;

/** A workflow's last "wait" decision and the versions it was decided at. */
interface RememberedWait {
  workflowVersion: number;
  delegationIds: readonly string[];
  delegationVersions: readonly number[];
}

/**
 * The last "wait" of each workflow this process decided, at most `WAITS_KEPT`. A member of `WorkerContext`
 * (`workflowWaits`), created in `fleet.ts`: no module-level state.
 */
export class WorkflowWaits {
  private readonly waits = new Map<string, RememberedWait>();

  /**
   * Remembers that `loaded` (a workflow and all its delegation rows, as one decision read them) decided "wait", when
   * that decision depends on nothing else: a RUNNING workflow whose definition names no skill. Otherwise forgets it.
   */
  rememberWait(loaded: LoadedWorkflow): void {
    const workflowId = loaded.record.workflowId;
    this.waits.delete(workflowId);
    if (loaded.state !== 'RUNNING' || decidesFromRegistry(loaded.definition)) return;
    if (this.waits.size >= WAITS_KEPT) this.waits.delete(this.waits.keys().next().value!);
    this.waits.set(workflowId, {
      workflowVersion: loaded.version,
      delegationIds: loaded.records.map((record) => record.delegationId),
      delegationVersions: loaded.records.map((record) => record.version),
    });
  }

  /** Forgets a workflow's remembered "wait" (a decision other than "wait" was made, or its versions moved). */
  forget(workflowId: string): void {
    this.waits.delete(workflowId);
  }

  /** @internal The remembered wait of a workflow (`waitsAgain`). */
  recall(workflowId: string): RememberedWait | undefined {
    return this.waits.get(workflowId);
  }
}

/** A step that names a skill takes its candidates from the registry: the decision reads more than the rows. */
function decidesFromRegistry(definition: WorkflowDefinition): boolean {
  return definition.steps.some((step) => step.skill !== undefined);
}

/**
 * True when the workflow's remembered "wait" still stands: the workflow row, its delegation list and every delegation
 * row are at the versions it was decided at (one round trip). False when nothing is remembered or anything moved
 * (then forgotten: the caller decides from a full read). Throws what the journal's read throws (Redis unreachable).
 */
export async function waitsAgain(ctx: WorkerContext, workflowId: string): Promise<boolean> {
  const remembered = ctx.workflowWaits.recall(workflowId);
  if (!remembered) return false;
  const now = await ctx.journal.workflowVersions(workflowId, remembered.delegationIds);
  const same =
    now.workflow === remembered.workflowVersion &&
    now.listLength === remembered.delegationIds.length &&
    now.delegations.every((version, index) => version === remembered.delegationVersions[index]);
  if (!same) ctx.workflowWaits.forget(workflowId);
  return same;
}
