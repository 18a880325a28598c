/**
 * Human-readable output of the CLI: the workflow timeline (`show`), the
 * workflow table (`list`), questions and agents. `--json` bypasses all of it.
 */

/** The parts of the API's workflow view the CLI prints (GET /v1/workflows/:id). */
export interface Attempt {
  delegationId: string;
  attempt: number;
  state: string;
  agentCardUrl: string;
  taskId?: string;
  contextId?: string;
  /** When the attempt was journaled (ISO 8601). */
  createdAt: string;
  /** When it finished (ISO 8601). */
  finishedAt?: string;
  sendCount: number;
  resendCount: number;
  /** Tries: SendMessage calls plus tries that ended before one could be made (the Agent Card could not be fetched). */
  tries?: number;
  /** `waiting for the agent` while the agent cannot be reached (the API's `AttemptProgress`). */
  progress?: string;
  /** The next try while waiting for the agent (ISO 8601). */
  nextTryAt?: string;
  /** Since when the agent could not be reached (ISO 8601). */
  unreachableSince?: string;
  resultText?: string;
  error?: { code?: string; message: string };
  replyMessageId?: string;
  replyState?: string;
  replyError?: string;
  effect?: string;
  evidence?: unknown;
  /** When its effect was verified (ISO 8601). */
  verifiedAt?: string;
  /** A compensation a person gave up: its undo will never happen. */
  abandoned?: boolean;
}

export interface Question {
  step: string;
  delegationId: string;
  taskId?: string;
  state: string;
  text: string;
  askedAt?: string;
  previousReplyRefused?: string;
}

export interface WorkflowView {
  workflowId: string;
  state: string;
  cancelRequested: boolean;
  failure?: string[];
  /** Why a person is needed (NEEDS_ATTENTION): the API's one attention shape. */
  attention?: { code: string; message: string; delegationId?: string; evidence?: unknown };
  /** Delegation ids a person approved to send again (`resolve retry`). */
  retryApproved?: string[];
  /** Compensation delegation ids a person gave up (`resolve abandon`): their effect is left in place. */
  abandonedCompensations?: string[];
  /** When the workflow was created (ISO 8601). */
  createdAt: string;
  /** When its row last changed (ISO 8601). */
  updatedAt: string;
  steps: { name: string; attempts: Attempt[]; compensations: Attempt[] }[];
  openQuestions: Question[];
  /** What happened, oldest first (docs/people.md "History"): each entry's time (ISO 8601) and one-line summary. */
  history?: HistoryEntry[];
}

/** One history entry of the view (the fields the CLI prints). */
export interface HistoryEntry {
  kind: string;
  at: string;
  summary: string;
  delegationId?: string;
  messageId?: string;
}

/** A registered agent (GET /v1/agents; instants ISO 8601, null when never). */
export interface Agent {
  id: string;
  cardUrl: string;
  card?: { name?: string; skills?: { id: string; name?: string }[] };
  status: 'active' | 'disabled' | 'unavailable';
  statusReason: string | null;
  lastCardFetchAt: string | null;
  lastCardFetchOk: boolean | null;
  lastError: { kind: string; message: string; at: string } | null;
  health: { window: number; calls: number; successes: number; successRate: number | null };
  /** The operator's fleet-wide limits; null (or absent from older services) when none. */
  limits?: AgentLimits | null;
}

/** An agent's fleet-wide limits as the API gives them. */
export interface AgentLimits {
  maxInFlight?: number;
  rate?: { sendsPerSecond?: number; resubscribesPerSecond?: number };
}

/** `limits maxInFlight 3, 5 sends/s, 2 resubscribes/s`, or `no limits`. */
export function formatLimits(limits: AgentLimits | null | undefined): string {
  const parts = [
    ...(limits?.maxInFlight !== undefined ? [`maxInFlight ${limits.maxInFlight}`] : []),
    ...(limits?.rate?.sendsPerSecond !== undefined ? [`${limits.rate.sendsPerSecond} sends/s`] : []),
    ...(limits?.rate?.resubscribesPerSecond !== undefined ? [`${limits.rate.resubscribesPerSecond} resubscribes/s`] : []),
  ];
  return parts.length > 0 ? `limits ${parts.join(', ')}` : 'no limits';
}

/** An instant of the view (ISO 8601, as the API gives it), or `-` when absent. */
const time = (at?: string) => at ?? '-';
const hostOf = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
};

/** `answered`: reply messageIds the history shows with their text and who (the bare reply line is left out for them). */
function attemptLines(attempt: Attempt, label: string, answered: ReadonlySet<string>): string[] {
  const lines = [`    ${label} ${attempt.delegationId}  ${attempt.state}  agent ${hostOf(attempt.agentCardUrl)}${attempt.taskId ? `  task ${attempt.taskId}` : ''}`];
  lines.push(`      started ${time(attempt.createdAt)}  finished ${time(attempt.finishedAt)}  tries ${attempt.tries ?? attempt.sendCount}${attempt.resendCount ? ` (resent ${attempt.resendCount})` : ''}`);
  if (attempt.resultText) lines.push(`      result: ${attempt.resultText}`);
  if (attempt.error) lines.push(`      ${attempt.finishedAt ? 'error' : 'last error'}: ${attempt.error.code ? `${attempt.error.code}: ` : ''}${attempt.error.message}`);
  if (attempt.nextTryAt) lines.push(`      waiting for the agent${attempt.unreachableSince ? ` (unreachable since ${attempt.unreachableSince})` : ''}: next try ${attempt.nextTryAt}`);
  if (attempt.replyMessageId && (!answered.has(attempt.replyMessageId) || attempt.replyError)) lines.push(`      reply ${attempt.replyMessageId} ${attempt.replyState ?? ''}${attempt.replyError ? ` (refused: ${attempt.replyError})` : ''}`);
  if (attempt.abandoned) lines.push('      given up by a person: this undo will never happen');
  if (attempt.effect) lines.push(`      effect ${attempt.effect} (verified ${time(attempt.verifiedAt)})${attempt.evidence !== undefined ? `  evidence ${JSON.stringify(attempt.evidence)}` : ''}`);
  return lines;
}

/** `show`: the workflow, per step every attempt and compensation in order, open questions, then the history: what happened, when, by whom. */
export function formatTimeline(view: WorkflowView): string {
  const history = view.history ?? [];
  const answered = new Set(history.filter((entry) => entry.kind === 'answer' && entry.messageId).map((entry) => entry.messageId!));
  const lines = [`workflow ${view.workflowId}  ${view.state}${view.cancelRequested ? '  (cancel requested)' : ''}`];
  lines.push(`  created ${time(view.createdAt)}  updated ${time(view.updatedAt)}`);
  if (view.attention) {
    lines.push(`  needs attention: ${view.attention.message} (${view.attention.code})`);
    if (view.attention.evidence !== undefined) lines.push(`    evidence ${JSON.stringify(view.attention.evidence)}`);
  }
  if (view.failure?.length) lines.push(`  failure: ${view.failure.join('; ')}`);
  if (view.abandonedCompensations?.length) lines.push(`  compensation given up by a person: ${view.abandonedCompensations.join(', ')}`);
  if (view.retryApproved?.length) lines.push(`  sent again by a person: ${view.retryApproved.join(', ')}`);
  for (const step of view.steps) {
    lines.push(`  step ${step.name}`);
    if (step.attempts.length === 0) lines.push('    (no attempt yet)');
    for (const attempt of step.attempts) lines.push(...attemptLines(attempt, `attempt ${attempt.attempt}`, answered));
    for (const compensation of step.compensations) lines.push(...attemptLines(compensation, 'compensation', answered));
  }
  for (const question of view.openQuestions) lines.push(formatQuestion(view.workflowId, question));
  if (history.length > 0) lines.push('  history', ...history.map((entry) => `    ${entry.at}  ${entry.summary}`));
  return lines.join('\n');
}

/** One open question, with the command that answers it. */
export function formatQuestion(workflowId: string, question: Question): string {
  const refused = question.previousReplyRefused ? ` (previous answer refused: ${question.previousReplyRefused})` : '';
  return `  ? ${workflowId} step ${question.step} ${question.state}: ${question.text || '(no text)'}${refused}\n    answer: durable-a2a reply ${workflowId} ${question.step} "…"`;
}

/** `list`: the header row above the workflow lines (human output only; `--json` prints the API's views). */
export const WORKFLOW_LINE_HEADER = 'WORKFLOW\tSTATE\tSTEPS';

/**
 * `list`: one line per workflow, tab-separated: id, state, steps (and open questions). A RUNNING workflow whose step
 * asks a question shows what it waits on, the question's state (INPUT_REQUIRED or AUTH_REQUIRED, the `--state`
 * filter's names), not RUNNING.
 */
export function formatWorkflowLine(view: WorkflowView): string {
  const questions = view.openQuestions.length ? `  ${view.openQuestions.length} question(s)` : '';
  const waitingOn = view.state === 'RUNNING' ? view.openQuestions[0]?.state : undefined;
  return `${view.workflowId}\t${waitingOn ?? view.state}\t${view.steps.length} step(s)${questions}`;
}

/**
 * `agents list` / `add` / `disable` / `enable`: one line per agent, tab-separated: id, status, name, card URL, skill
 * ids, health (`<percent>% of <calls>` over the last calls, `-` before any), the last card fetch, then the reason it is
 * not picked and the last error when there are.
 */
export function formatAgent(agent: Agent): string {
  const skills = (agent.card?.skills ?? []).map((skill) => skill.id).join(',') || '-';
  const { successRate, calls } = agent.health;
  const health = successRate === null ? 'health -' : `health ${Math.round(successRate * 100)}% of ${calls}`;
  const fetched = `card ${agent.lastCardFetchAt ?? 'never fetched'}${agent.lastCardFetchOk === false ? ' (failed)' : ''}`;
  const columns = [agent.id, agent.status, agent.card?.name ?? '', agent.cardUrl, skills, health, fetched];
  if (agent.statusReason) columns.push(agent.statusReason);
  if (agent.limits) columns.push(formatLimits(agent.limits));
  if (agent.lastError) columns.push(`last error ${agent.lastError.at} ${agent.lastError.kind}: ${agent.lastError.message.slice(0, 200)}`);
  return columns.join('\t');
}
