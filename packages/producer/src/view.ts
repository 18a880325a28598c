/**
 * The journal view of a workflow: every step, every attempt, open questions.
 */
import { isAwaitingAnswer, isFinished, type Attention, type DelegationView, type Journal, type Message, type WorkflowDefinition } from '@durable-a2a/shared';

/** One attempt of a step (or of its compensation), as journaled. */
export interface AttemptSummary extends Omit<DelegationView, 'message' | 'replyMessage'> {
  finished: boolean;
  /** The text parts of the result: artifacts, or the direct reply message. */
  resultText?: string;
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
  askedAt?: string;
  /** Why the agent refused the previous answer, if it did. */
  previousReplyRefused?: string;
}

export interface WorkflowView {
  workflowId: string;
  state: string;
  cancelRequested: boolean;
  failure?: string[];
  /** Why a person is needed (NEEDS_ATTENTION): a stable code, a message and the evidence. */
  attention?: Attention;
  createdAt: number;
  updatedAt: number;
  definition: WorkflowDefinition;
  steps: StepView[];
  openQuestions: OpenQuestion[];
}

const textOf = (message?: Message) => message?.parts.map((part) => part.text ?? '').join('') ?? '';

function summarize(view: DelegationView): AttemptSummary {
  const { message: _message, replyMessage: _reply, ...rest } = view;
  const fromArtifacts = view.artifacts.flatMap((artifact) => artifact.parts.map((part) => part.text ?? '')).join('');
  const direct = (view.result as { message?: Message } | undefined)?.message;
  const resultText = fromArtifacts || (direct ? textOf(direct) : undefined);
  return { ...rest, finished: isFinished(view.state), ...(resultText ? { resultText } : {}) };
}

/** Reads a workflow's view, or undefined if it does not exist (or expired). */
export async function workflowView(journal: Journal, workflowId: string): Promise<WorkflowView | undefined> {
  const hash = await journal.getWorkflow(workflowId);
  if (!hash) return undefined;
  const definition = hash.definition;
  const ids = await journal.delegationIds(workflowId);
  const delegations = (await Promise.all(ids.map((delegationId) => journal.getDelegationView({ workflowId, delegationId })))).filter(
    (delegation): delegation is DelegationView => delegation !== undefined,
  );
  const steps = definition.steps.map((step) => ({
    name: step.name,
    attempts: delegations.filter((d) => d.kind === 'step' && d.step === step.name).map(summarize),
    compensations: delegations.filter((d) => d.kind === 'compensation' && d.step === step.name).map(summarize),
  }));
  const openQuestions: OpenQuestion[] = delegations
    .filter((d) => isAwaitingAnswer(d))
    .map((d) => ({
      step: d.step,
      delegationId: d.delegationId,
      taskId: d.taskId,
      contextId: d.contextId,
      state: d.state as OpenQuestion['state'],
      question: d.question,
      text: textOf(d.question),
      askedAt: d.statusTimestamp,
      ...(d.replyState === 'refused' && d.replyError ? { previousReplyRefused: d.replyError } : {}),
    }));
  return {
    workflowId,
    state: hash.state,
    cancelRequested: hash.cancelRequested,
    failure: hash.failure,
    attention: hash.attention,
    createdAt: hash.createdAt,
    updatedAt: hash.updatedAt,
    definition,
    steps,
    openQuestions,
  };
}
