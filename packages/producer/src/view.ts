/**
 * The journal view of a workflow: every step, every attempt, open questions.
 */
import type { Message } from '@durable-a2a/a2a';
import {
  answerLinkFor,
  isAwaitingAnswer,
  isFinished,
  isParked,
  isStepStopped,
  tenantOfWorkflowId,
  type AnswerLink,
  type Attention,
  type DelegationView,
  type Journal,
  type OpenQuestionSummary,
  type WorkflowDefinition,
  type WorkflowSummary,
} from '@durable-a2a/shared';
import { historyView, type HistoryEntryView } from './history-view.ts';
import { instantOf } from './instant.ts';

/**
 * Where an attempt stands, derived from the journal:
 * - `sending`: journaled, SendMessage not answered yet (no task id);
 * - `waiting for the agent`: the agent could not be reached and nothing was sent; the next try is at `nextTryAt`;
 * - `waiting for a slot at <agent>`: the send waits for its agent's limits (fleet-wide `maxInFlight` or rate, this
 *   worker's share, a pause the agent asked for); nothing was sent; the next try is at `nextTryAt`;
 * - `held`: waiting for earlier steps (`after`);
 * - `following`: a worker holds the stream (follow lease) of its task;
 * - `polling`: no open stream; the reconciler checks the task at `nextCheckAt`;
 * - `parked`: the task waits for input that has been answered, the answer is on its way;
 * - `waiting for a person`: an open question (INPUT_REQUIRED / AUTH_REQUIRED), or AMBIGUOUS;
 * - `finished`: a terminal state.
 */
export type AttemptProgress =
  | 'sending'
  | 'waiting for the agent'
  | `waiting for a slot at ${string}`
  | 'held'
  | 'following'
  | 'polling'
  | 'parked'
  | 'waiting for a person'
  | 'finished';

/**
 * The journal row's instants (ms since epoch in the journal) that a view shows as ISO 8601 strings (UTC,
 * `toISOString()`). `statusTimestampMs` is not shown: `statusTimestamp` is the same instant as the agent wrote it.
 */
const ATTEMPT_INSTANT_FIELDS = [
  'createdAt',
  'updatedAt',
  'sendStartedAt',
  'firstNotFoundAt',
  'noProgressSince',
  'finishedAt',
  'replySendUntil',
  'questionAskedAt',
  'questionExpiredAt',
  'verifiedAt',
] as const satisfies readonly (keyof DelegationView)[];
type AttemptInstantField = (typeof ATTEMPT_INSTANT_FIELDS)[number];

/** An instant (ms since epoch) as a view shows it: ISO 8601, UTC (`new Date(ms).toISOString()`'s text). */
export { instantOf };

/**
 * One attempt of a step (or of its compensation), as journaled. Every instant is an ISO 8601 string (UTC): `createdAt`,
 * `updatedAt`, `sendStartedAt`, `finishedAt`, `verifiedAt`, `questionAskedAt`, `questionExpiredAt`, `firstNotFoundAt`,
 * `noProgressSince`, `replySendUntil`, `nextTryAt`, `unreachableSince`, `nextCheckAt`.
 */
export interface AttemptSummary
  extends Omit<DelegationView, 'message' | 'replyMessage' | 'nextTryAt' | 'unreachableSince' | 'slotWaitUntil' | 'statusTimestampMs' | AttemptInstantField>,
    Partial<Record<Exclude<AttemptInstantField, 'createdAt' | 'updatedAt'>, string>> {
  /** When the attempt was journaled (ISO 8601). */
  createdAt: string;
  /** When its journal row last changed (ISO 8601). */
  updatedAt: string;
  finished: boolean;
  /** The text parts of the result: artifacts, else the direct reply message, else the final status message (V3). */
  resultText?: string;
  /** Where the attempt stands now (see AttemptProgress). */
  progress: AttemptProgress;
  /**
   * Tries of this attempt: SendMessage calls made (first send and resends with the same messageId), plus tries that
   * ended before one could be made (the agent's Agent Card could not be fetched).
   */
  tries: number;
  /** The last classified error journaled for this attempt: stable code, message, retryable, delivery. */
  lastError?: { code: string; message: string; retryable?: boolean; delivery?: string };
  /**
   * While the attempt waits for an agent that could not be reached (progress `waiting for the agent`): when the next
   * try is due (ISO 8601, always in the future; once due, the try is under way and progress is `sending`).
   */
  nextTryAt?: string;
  /** Since when the agent could not be reached (ISO 8601): the first try of this attempt that failed to reach it. */
  unreachableSince?: string;
  /** When the reconciler next checks this attempt (ISO 8601), while it is unfinished. */
  nextCheckAt?: string;
  /** A compensation a person gave up (`resolve('abandon')` on COMPENSATION_FAILED): its undo will never happen. */
  abandoned?: true;
}

export interface StepView {
  name: string;
  attempts: AttemptSummary[];
  compensations: AttemptSummary[];
}

export interface OpenQuestion {
  step: string;
  delegationId: string;
  taskId?: string;
  contextId?: string;
  state: 'INPUT_REQUIRED' | 'AUTH_REQUIRED';
  question?: Message;
  /** The question's text parts, joined. */
  text: string;
  /** When the agent asked (ISO 8601, UTC): its status timestamp, as the journal read it. */
  askedAt?: string;
  /** Why the agent refused the previous answer, if it did. */
  previousReplyRefused?: string;
  /** The question's signed answer link (a person answers without an API token), when links are configured. */
  answerLink?: AnswerLink;
}

/** What signs answer links (`ProducerOptions.answerLinks`): the HMAC key, the HTTP service's public URL, the links' life (ms). */
export interface AnswerLinkSettings {
  secret: string;
  baseUrl: string;
  ttlMs?: number;
}

/** Default life of an answer link from when its question was asked: 7 days (as the workers'). */
export const DEFAULT_ANSWER_LINK_TTL_MS = 7 * 24 * 3600 * 1000;

export interface WorkflowView {
  workflowId: string;
  /** The tenant that owns the workflow (docs/tenants.md): its id says it; a record from before tenants is `default`'s. */
  tenant: string;
  state: string;
  cancelRequested: boolean;
  failure?: string[];
  /** Why a person is needed (NEEDS_ATTENTION): a stable code, a message and the evidence. */
  attention?: Attention;
  /**
   * A person's decisions (`resolve`), from the workflow row; absent when empty. `retryApproved`: attempts a
   * person approved to send again (AMBIGUOUS step attempts, or failed compensations).
   */
  retryApproved?: string[];
  /** Failed compensations a person gave up (`resolve('abandon')` on COMPENSATION_FAILED): their effect is left in place. */
  abandonedCompensations?: string[];
  /** When the workflow was created (ISO 8601, UTC). */
  createdAt: string;
  /** When its workflow row last changed (ISO 8601, UTC). */
  updatedAt: string;
  definition: WorkflowDefinition;
  steps: StepView[];
  openQuestions: OpenQuestion[];
  /**
   * What happened, oldest first (docs/people.md "History"): questions with the request they belong to, answers with who and
   * when, refused answers, cancels, resolutions, re-delegations with their reasons, verifications with their
   * evidence, compensations; every `at` ISO 8601. A first `dropped` entry says how many older ones the bounds dropped.
   */
  history: HistoryEntryView[];
}

const textOf = (message?: Message) => message?.parts.map((part) => part.text ?? '').join('') ?? '';

/**
 * The attempt's progress from its journal row, its follow lease and the workflow state. `stepStopped`: its question is
 * closed (`isStepStopped`: a step of a stopping workflow): no person's answer is awaited (the journal refuses it).
 */
function progressOf(view: DelegationView, followed: boolean, workflowState: string, nowMs: number, stepStopped: boolean): AttemptProgress {
  if (isFinished(view.state)) return 'finished';
  if ((isAwaitingAnswer(view) && !stepStopped) || view.state === 'AMBIGUOUS' || (workflowState === 'NEEDS_ATTENTION' && view.error)) return 'waiting for a person';
  if (isParked(view.state)) return 'parked';
  if (view.held) return 'held';
  if (followed) return 'following';
  if (waitingForSlot(view, nowMs)) return `waiting for a slot at ${view.agentCardUrl}`;
  if (waitingForAgent(view, nowMs)) return 'waiting for the agent';
  return view.taskId ? 'polling' : 'sending';
}

/** An INTENT whose send waits for its agent's flow control (fleet-wide slots, a share, a rate, a pause): not due yet. */
const waitingForSlot = (view: DelegationView, nowMs: number): boolean =>
  view.state === 'INTENT' && view.taskId === undefined && view.sendStartedAt === undefined && view.slotWaitUntil !== undefined && view.slotWaitUntil > nowMs;

/** An INTENT waiting for its next try after its agent could not be reached (the try is not due yet). */
const waitingForAgent = (view: DelegationView, nowMs: number): boolean =>
  view.state === 'INTENT' && view.taskId === undefined && view.sendStartedAt === undefined && view.nextTryAt !== undefined && view.nextTryAt > nowMs;

/** What the journal says of an unfinished attempt beside its row: a follow lease held, when the reconciler next checks it (ms). */
export interface Observed {
  followed: boolean;
  nextCheckAt?: number;
}

/** DelegationView fields an attempt's summary leaves out (or shows in its own way: `nextTryAt`, `unreachableSince`). */
const LEFT_OUT = ['message', 'replyMessage', 'nextTryAt', 'unreachableSince', 'slotWaitUntil', 'statusTimestampMs'] as const;
/** How a summary shows a row's field, when not as it is: left out (`LEFT_OUT`) or an instant (ISO 8601). One lookup a field. */
const SHOWN_AS: ReadonlyMap<string, 'left out' | 'instant'> = new Map([...LEFT_OUT.map((field) => [field, 'left out'] as const), ...ATTEMPT_INSTANT_FIELDS.map((field) => [field, 'instant'] as const)]);
/** What a finished attempt observes (no lease, no check): nothing is read for it. */
const NOT_OBSERVED: Observed = { followed: false };

/**
 * The attempt's summary (`AttemptSummary`, instants ISO 8601 against `nowMs`): its row's fields in their order (minus `LEFT_OUT`, instants as ISO 8601), then what the view
 * derives. Built in one object, field by field (this runs for every attempt of every view `waitFor` returns).
 * `stepStopped`: a step of a stopping workflow (`isStepStopped`): its question is closed, so not 'waiting for a person'.
 */
export function summarize(view: DelegationView, observed: Observed, workflowState: string, abandoned: boolean, nowMs: number, stepStopped = false): AttemptSummary {
  const row = view as unknown as Readonly<Record<string, unknown>>;
  const summary: Record<string, unknown> = {};
  for (const field of Object.keys(row)) {
    const shown = SHOWN_AS.get(field);
    if (shown === 'left out') continue;
    const value = row[field];
    summary[field] = value !== undefined && shown === 'instant' ? instantOf(value as number) : value;
  }
  let fromArtifacts = '';
  for (const artifact of view.artifacts) for (const part of artifact.parts) fromArtifacts += part.text ?? '';
  const direct = (view.result as { message?: Message } | undefined)?.message;
  // V3: a COMPLETED task with no artifacts may carry its answer in the final status message.
  const resultText = fromArtifacts || (direct ? textOf(direct) : '') || (view.state === 'COMPLETED' ? textOf(view.statusMessage) : '');
  const finished = isFinished(view.state);
  summary.finished = finished;
  if (resultText) summary.resultText = resultText;
  summary.progress = progressOf(view, observed.followed, workflowState, nowMs, stepStopped);
  summary.tries = view.sendCount + view.unsentTries;
  if (view.error) summary.lastError = view.error;
  if (waitingForAgent(view, nowMs) || waitingForSlot(view, nowMs)) summary.nextTryAt = instantOf(view.nextTryAt!);
  if (!finished && view.unreachableSince !== undefined && view.state === 'INTENT') summary.unreachableSince = instantOf(view.unreachableSince);
  if (!finished && observed.nextCheckAt !== undefined) summary.nextCheckAt = instantOf(observed.nextCheckAt);
  if (abandoned) summary.abandoned = true;
  return summary as unknown as AttemptSummary;
}

/** What the journal says of each unfinished attempt's follow lease and next check (none of a finished one's is read). */
async function observe(journal: Journal, workflowId: string, delegations: readonly DelegationView[]): Promise<Map<string, Observed>> {
  return new Map(
    await Promise.all(
      delegations.map(async (d): Promise<[string, Observed]> => {
        if (isFinished(d.state)) return [d.delegationId, NOT_OBSERVED];
        const ref = { workflowId, delegationId: d.delegationId };
        const [followed, nextCheckAt] = await Promise.all([journal.isFollowed(ref), journal.nextCheckAt(ref)]);
        return [d.delegationId, { followed, nextCheckAt }];
      }),
    ),
  );
}

/**
 * Reads a workflow's view, or undefined if it does not exist (or expired). `published`: the message that woke a
 * waiter on the workflow's change channel; when it is the compacted record of the workflow's finish
 * (updateWorkflow-4.lua), the view is built from it and nothing is read.
 */
export async function workflowView(journal: Journal, workflowId: string, published?: string, nowMs = Date.now(), links?: AnswerLinkSettings): Promise<WorkflowView | undefined> {
  const snapshot = (published === undefined ? undefined : journal.snapshotFromPublished(workflowId, published)) ?? (await journal.getWorkflowSnapshot(workflowId));
  if (!snapshot) return undefined;
  const { workflow: hash, delegations, history } = snapshot;
  const definition = hash.definition;
  // A finished workflow's attempts are all finished: nothing to read, no await.
  const observed = delegations.every((d) => isFinished(d.state)) ? undefined : await observe(journal, workflowId, delegations);
  const abandoned = new Set(hash.abandonedCompensations);
  const summary = (d: DelegationView) =>
    summarize(d, observed?.get(d.delegationId) ?? NOT_OBSERVED, hash.state!, d.kind === 'compensation' && abandoned.has(d.delegationId), nowMs, isStepStopped(d.kind, hash));
  const steps = definition.steps.map((step) => ({
    name: step.name,
    attempts: delegations.filter((d) => d.kind === 'step' && d.step === step.name).map(summary),
    compensations: delegations.filter((d) => d.kind === 'compensation' && d.step === step.name).map(summary),
  }));
  // A step's question closes when its workflow is stopping (canceled, or another step failed for good): the journal
  // refuses its answer (stepStopped.lua). A compensation's stays open.
  const openQuestions: OpenQuestion[] = delegations
    .filter((d) => isAwaitingAnswer(d) && !isStepStopped(d.kind, hash))
    .map((d) => ({
      step: d.step,
      delegationId: d.delegationId,
      taskId: d.taskId,
      contextId: d.contextId,
      state: d.state as OpenQuestion['state'],
      question: d.question,
      text: textOf(d.question),
      ...(d.statusTimestampMs !== undefined ? { askedAt: instantOf(d.statusTimestampMs) } : d.statusTimestamp ? { askedAt: d.statusTimestamp } : {}),
      ...(d.replyState === 'refused' && d.replyError ? { previousReplyRefused: d.replyError } : {}),
      ...(links && d.questionKey ? { answerLink: linkOf(links, d, d.questionKey) } : {}),
    }));
  return {
    workflowId,
    tenant: tenantOfWorkflowId(workflowId),
    state: hash.state,
    cancelRequested: hash.cancelRequested,
    failure: hash.failure,
    attention: hash.attention,
    ...(hash.retryApproved.length > 0 ? { retryApproved: hash.retryApproved } : {}),
    ...(hash.abandonedCompensations.length > 0 ? { abandonedCompensations: hash.abandonedCompensations } : {}),
    createdAt: instantOf(hash.createdAt),
    updatedAt: instantOf(hash.updatedAt),
    definition,
    steps,
    openQuestions,
    history: historyView(history, delegations, hash.createdAt),
  };
}

/** The open question's link, as the workers put it in `question.opened` (the same question and asked-at time). */
function linkOf(links: AnswerLinkSettings, d: DelegationView, questionKey: string): AnswerLink {
  const settings = { secret: links.secret, baseUrl: links.baseUrl, ttlMs: links.ttlMs ?? DEFAULT_ANSWER_LINK_TTL_MS };
  return answerLinkFor(settings, { workflowId: d.workflowId, delegationId: d.delegationId, questionKey, askedAtMs: d.statusTimestampMs ?? d.updatedAt });
}

/** A workflow row of a listing (`GET /v1/workflows`, `Producer.search`), its instants ISO 8601 (UTC). */
export interface WorkflowSummaryView extends Omit<WorkflowSummary, 'createdAt' | 'updatedAt'> {
  /** When the workflow was created (ISO 8601). */
  createdAt: string;
  /** When its workflow row last changed (ISO 8601). */
  updatedAt: string;
  /** The tenant that owns the workflow (its id says it). */
  tenant: string;
}

/** The journal's listing row (instants in ms) as views show it. */
export const workflowSummaryView = ({ createdAt, updatedAt, ...summary }: WorkflowSummary): WorkflowSummaryView => ({
  ...summary,
  tenant: tenantOfWorkflowId(summary.workflowId),
  createdAt: instantOf(createdAt),
  updatedAt: instantOf(updatedAt),
});

/** An open question of the questions listing (`GET /v1/questions`), its instant ISO 8601 (UTC). */
export interface OpenQuestionSummaryView extends Omit<OpenQuestionSummary, 'askedAtMs'> {
  /** When the agent asked (ISO 8601): its status timestamp, else when the row last changed. */
  askedAt: string;
}

/** The journal's open question row (instant in ms) as views show it. */
export const openQuestionSummaryView = ({ askedAtMs, ...question }: OpenQuestionSummary): OpenQuestionSummaryView => ({ ...question, askedAt: instantOf(askedAtMs) });
