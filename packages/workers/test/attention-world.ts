/**
 * A pure model of one workflow for the attention tests: the decider (`decide`), the compensation chain
 * (`nextUndo`) and a person's decision (`allowedResolveActions`, `resolutionPatch`) applied to an in-memory
 * journal the way workflow/advance.ts, workflow/compensation.ts and producer.resolve apply them, with
 * agents whose outcomes are scripted per delegation id, then taken from a list.
 */
import {
  allowedResolveActions,
  decide,
  resolutionPatch,
  type Attention,
  type AttemptView,
  type DelegationRecord,
  type Effect,
  type ResolveAction,
  type Step,
  type WorkflowDefinition,
  type WorkflowPatch,
} from '@durable-a2a/shared';
import { nextUndo } from '../src/workflow/undo-chain.ts';

/** What an agent does with one delegation (a step attempt or a compensation). */
export interface Outcome {
  state: 'COMPLETED' | 'FAILED' | 'REJECTED' | 'CANCELED' | 'AMBIGUOUS';
  effect?: Effect;
  errorCode?: string;
}

/** The workflow row as the model keeps it. */
export interface Row {
  state: string;
  cancelRequested: boolean;
  stopping?: string[];
  failure?: string[];
  attention?: Attention;
  retryApproved: string[];
  abandonedCompensations: string[];
}

export interface World {
  definition: WorkflowDefinition;
  row: Row;
  records: AttemptView[];
  /** Outcomes by delegation id (the run up to the attention), then `later` in order. */
  scripted: Record<string, Outcome>;
  later: Outcome[];
  /** Set cancelRequested when this delegation is journaled (the user cancels while it runs). */
  cancelAt?: string;
}

const FINISHED = new Set(['COMPLETED', 'FAILED', 'REJECTED', 'CANCELED', 'AMBIGUOUS', 'LOST']);
const TERMINAL = new Set(['COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED']);
const asRecords = (world: World) => world.records.map((record) => ({ ...record, workflowId: 'wf' }) as unknown as DelegationRecord);
const stepOf = (world: World, name: string) => world.definition.steps.find((step) => step.name === name)!;

function journal(world: World, record: AttemptView): void {
  world.records.push(record);
  if (record.delegationId === world.cancelAt) world.row.cancelRequested = true;
}

/** The agent answers one open delegation (or its verifier reports). False: nothing was open. */
function settleOne(world: World): boolean {
  const open = world.records.find((record) => {
    if (record.held) return false;
    if (!FINISHED.has(record.state)) return true;
    return record.kind === 'step' && record.state !== 'AMBIGUOUS' && stepOf(world, record.step).verifier !== undefined && record.effect === undefined;
  });
  if (!open) return false;
  const outcome = world.scripted[open.delegationId] ?? world.later.shift() ?? { state: 'REJECTED' };
  if (!FINISHED.has(open.state)) {
    open.state = outcome.state;
    if (outcome.state !== 'COMPLETED') open.error = { code: outcome.errorCode ?? 'AGENT', message: `${open.delegationId} ${outcome.state}` };
  }
  if (open.kind === 'step' && open.state !== 'AMBIGUOUS' && stepOf(world, open.step).verifier) open.effect = outcome.effect ?? (open.state === 'COMPLETED' ? 'present' : 'absent');
  return true;
}

function applyRow(world: World, patch: WorkflowPatch): void {
  const { attention, ...rest } = patch;
  Object.assign(world.row, rest);
  if (attention !== undefined) world.row.attention = attention ?? undefined;
}

/** One decision of the running workflow, applied. False: it waits for nothing (a stall). */
function runOnce(world: World, lookup: (step: Step) => string[]): boolean {
  const attempts = world.records.map((record) => ({ ...record, retryApproved: world.row.retryApproved.includes(record.delegationId) }));
  const decision = decide({ definition: world.definition, state: 'RUNNING', cancelRequested: world.row.cancelRequested, stopping: world.row.stopping, attempts }, lookup);
  switch (decision.kind) {
    case 'start-attempt':
      journal(world, { delegationId: `${decision.step}.${decision.attempt}`, step: decision.step, kind: 'step', attempt: decision.attempt, agentCardUrl: decision.agentCardUrl, state: 'INTENT' });
      return true;
    case 'release':
      world.records.find((record) => record.delegationId === decision.delegationId)!.held = false;
      return true;
    case 'cancel-running':
      applyRow(world, { stopping: decision.reasons });
      for (const id of decision.delegationIds) Object.assign(world.records.find((record) => record.delegationId === id)!, { state: 'CANCELED' });
      return true;
    case 'wait':
      return settleOne(world);
    case 'complete':
      applyRow(world, { state: 'COMPLETED' });
      return true;
    case 'fail':
      applyRow(world, { state: decision.canceled ? 'CANCELED' : 'FAILED', failure: decision.reasons });
      return true;
    case 'compensate':
      applyRow(world, { state: 'COMPENSATING', failure: [decision.reason] });
      return true;
    case 'needs-attention':
      applyRow(world, { state: 'NEEDS_ATTENTION', attention: { code: decision.code, message: decision.reason, delegationId: decision.delegationId } });
      return true;
  }
}

/** One move of the compensation chain, applied as workflow/compensation.ts does. */
function compensateOnce(world: World): boolean {
  const move = nextUndo(world.definition.steps, asRecords(world), world.row);
  switch (move.kind) {
    case 'start':
      journal(world, { delegationId: move.delegationId, step: move.step.name, kind: 'compensation', attempt: move.original.attempt, agentCardUrl: 'https://undo.example/', state: 'INTENT' });
      return true;
    case 'waiting':
    case 'verifying':
      return settleOne(world);
    case 'failed':
      applyRow(world, { state: 'NEEDS_ATTENTION', attention: { code: 'COMPENSATION_FAILED', message: move.reason, delegationId: move.record.delegationId } });
      return true;
    case 'done':
      applyRow(world, move.leftInPlace.length > 0 ? { state: 'FAILED', failure: [...(world.row.failure ?? []), ...move.leftInPlace] } : { state: 'COMPENSATED' });
      return true;
  }
}

/** Runs until a person is needed, the workflow ends, or it stalls (bounded). Returns the row's state, or 'STALLED'. */
export function runUntilSettled(world: World, lookup: (step: Step) => string[]): string {
  for (let round = 0; round < 200; round++) {
    if (world.row.state === 'NEEDS_ATTENTION' || TERMINAL.has(world.row.state)) return world.row.state;
    const moved = world.row.state === 'COMPENSATING' ? compensateOnce(world) : runOnce(world, lookup);
    if (!moved) return 'STALLED';
  }
  return 'STALLED';
}

/** The actions a person may take now (as producer.resolve checks them). */
export const allowedNow = (world: World): ResolveAction[] => allowedResolveActions(world.row, world.records);

/** A person's accepted decision, written as producer.resolve writes it. */
export function resolve(world: World, action: ResolveAction): void {
  applyRow(world, resolutionPatch(world.row, world.records, action));
}

export const isTerminal = (state: string) => TERMINAL.has(state);
