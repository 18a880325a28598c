/**
 * The /ui workflow page: the outcome heading, what a person can do now (answer an open question, next to the
 * request it belongs to; decide on NEEDS_ATTENTION; cancel a running workflow), then each step's attempts (agent
 * by card name, task id, messageId, state, last error, tries, next check, verification with its evidence,
 * re-delegation reason), the compensations in the order they ran, the history slot and the timeline.
 * `workflowPanel` is the polled part; everything in it is rendered from one read of the workflow (its view), so
 * no part of the panel can contradict another (an answered question and its attempt change together).
 */
import { normalizeAgentCardUrl } from '@durable-a2a/a2a';
import { parseAgentTimestamp } from '@durable-a2a/shared';
import type { AttemptSummary, OpenQuestion, WorkflowView } from '../../view.ts';
import { allowedResolveActions } from '../../calls/cancel.ts';
import { historySection } from './history-section.ts';
import { badge, html, page, time, type Safe } from './html.ts';
import { evidenceList } from './evidence.ts';
import { outcomeSection } from './outcome.ts';

/** What the panel shows besides the view. */
export interface WorkflowPanelParts {
  /** When the reconciler next checks each unfinished attempt (ms since epoch), by delegation id. */
  nextChecks: ReadonlyMap<string, number>;
  /** Agent Card names by the registry's card URL spelling (`normalizeAgentCardUrl`); an agent not found shows its URL. */
  agentNames: ReadonlyMap<string, string>;
  /** The workflow's history section, rendered by its own module; absent: the page has none. */
  history?: Safe;
}

/** The confirmation shown after each action (the script shows it from `data-done`; a post without script redirects with `?done=<action>`). */
export const DONE_NOTICES = {
  answered: 'Answer sent to the agent. The step goes on once the agent has read it.',
  retry: 'Retry recorded: the attempts are sent again as new attempts.',
  abandon: 'Abandon recorded: the workflow stops and undoes what had an effect.',
  cancel: 'Cancel requested: running tasks are cancelled, then steps that had an effect are undone.',
} as const;
export type DoneAction = keyof typeof DONE_NOTICES;

const pathOf = (workflowId: string) => `/ui/workflows/${encodeURIComponent(workflowId)}`;

/** A person's words for what a question waits for. */
export const waitingForText = (state: string): string => ({ INPUT_REQUIRED: 'an answer', AUTH_REQUIRED: 'a credential', NEEDS_ATTENTION: 'a decision' })[state] ?? state;

/** The agent's card name, or undefined when the registry does not know the URL. */
function agentName(url: string, names: ReadonlyMap<string, string>): string | undefined {
  try {
    return names.get(normalizeAgentCardUrl(url));
  } catch {
    return undefined;
  }
}

/** The agent's card name (its URL as a tooltip and below), or the URL when the registry does not know it. */
function agentLabel(url: string, names: ReadonlyMap<string, string>): Safe {
  const name = agentName(url, names);
  return name ? html`<span title="${url}">${name}</span><br><span class="muted mono">${url}</span>` : html`<span class="mono">${url}</span>`;
}

/** What was asked of the agent in a step: its message's text parts (and how many parts are not text). */
function requestOf(view: WorkflowView, stepName: string): string {
  const message = view.definition.steps.find((step) => step.name === stepName)?.message;
  if (!message) return '';
  if ('text' in message) return message.text;
  const text = message.parts.map((part) => part.text ?? '').join('');
  const other = message.parts.filter((part) => part.text === undefined).length;
  return other > 0 ? `${text}${text ? ' ' : ''}(and ${other} part(s) that are not text)` : text;
}

const requestBlock = (view: WorkflowView, step: string) => html`<p class="label">What was asked of the agent</p><blockquote class="request">${requestOf(view, step) || '(no text)'}</blockquote>`;

function cancelSection(view: WorkflowView): Safe {
  if (view.state !== 'RUNNING' || view.cancelRequested) return html``;
  return html`<form class="cancel" method="post" action="${pathOf(view.workflowId)}/cancel" data-action="cancel" data-done="${DONE_NOTICES.cancel}">
<button type="submit" class="danger">Cancel workflow</button> <span class="muted">Running tasks get CancelTask; steps that had an effect are undone.</span></form>`;
}

function attentionSection(view: WorkflowView): Safe {
  if (view.state !== 'NEEDS_ATTENTION') return html``;
  const action = `${pathOf(view.workflowId)}/resolve`;
  const compensationFailed = view.attention?.code === 'COMPENSATION_FAILED';
  return html`<section class="attention" aria-labelledby="attention-heading"><h2 id="attention-heading">A person must decide</h2>
<p>${view.attention ? `${view.attention.message} (${view.attention.code})` : 'The workflow cannot decide on its own.'}</p>
${view.attention?.evidence === undefined ? html`` : html`<h3>Evidence</h3>${evidenceList(view.attention.evidence)}`}
${allowedResolveActions(view).includes('retry') ? html`<form method="post" action="${action}" data-action="resolve" data-done="${DONE_NOTICES.retry}"><input type="hidden" name="action" value="retry">
<button type="submit">Retry</button> <span class="muted">${compensationFailed ? 'Send the failed compensation again as a new one (e.g. once its agent is fixed).' : 'Run the AMBIGUOUS attempts again as new attempts (the agent may have had the first).'}</span></form>` : html``}
<form method="post" action="${action}" data-action="resolve" data-done="${DONE_NOTICES.abandon}"><input type="hidden" name="action" value="abandon">
<button type="submit" class="danger">Abandon</button> <span class="muted">${compensationFailed ? 'Give this compensation up: its effect stays; undo the rest, then FAILED.' : 'Stop, and undo what has an effect (else FAILED).'}</span></form>
</section>`;
}

function questionForm(view: WorkflowView, question: OpenQuestion): Safe {
  const id = `answer-${question.delegationId}`;
  return html`<article class="question" id="question-${question.delegationId}" aria-labelledby="${id}-heading">
<h3 id="${id}-heading">Step ${question.step} waits for ${waitingForText(question.state)}</h3>
${requestBlock(view, question.step)}
<p class="label">The agent asks</p>
<blockquote class="agent-text">${question.text || '(the agent sent no text)'}</blockquote>
<p class="muted">asked ${time(question.askedAt)} · task <span class="mono">${question.taskId ?? '–'}</span></p>
${question.previousReplyRefused ? html`<p class="error" role="alert">The agent refused the previous answer: ${question.previousReplyRefused}</p>` : ''}
<form method="post" action="${pathOf(view.workflowId)}/steps/${encodeURIComponent(question.step)}/reply" data-action="reply" data-done="${DONE_NOTICES.answered}">
<label for="${id}">Your answer</label>
<textarea id="${id}" name="text" rows="2"></textarea>
<button type="submit">Send answer</button>
</form></article>`;
}

/** An answered question whose agent has not moved on yet: shown as answered, never as still open. */
function answeredQuestion(view: WorkflowView, attempt: AttemptSummary): Safe {
  return html`<article class="question answered" id="question-${attempt.delegationId}">
<h3>Step ${attempt.step} has its answer</h3>${requestBlock(view, attempt.step)}
<p>Answer sent; waiting for the agent to go on.</p></article>`;
}

function questionsSection(view: WorkflowView): Safe {
  const answered = view.steps.flatMap((step) => step.attempts).filter((attempt) => attempt.progress === 'parked');
  if (view.openQuestions.length === 0 && answered.length === 0) return html``;
  return html`<section aria-labelledby="questions-heading"><h2 id="questions-heading">Questions</h2>${view.openQuestions.map((question) => questionForm(view, question))}${answered.map((attempt) => answeredQuestion(view, attempt))}</section>`;
}

/** Why an attempt was followed by another: its outcome and error. */
const reasonOf = (attempt: AttemptSummary) => `${attempt.delegationId} ended ${attempt.state}${attempt.error ? `: ${attempt.error.message}` : ''}`;

function stateCell(attempt: AttemptSummary): Safe {
  const state = attempt.progress === 'parked' ? html`${badge(attempt.state)} <span class="muted">answered, waiting for the agent</span>` : badge(attempt.state);
  return html`${state}${attempt.held ? html` <span class="muted">held</span>` : ''}${attempt.progress === 'waiting for the agent' ? html` <span class="muted">waiting for the agent${attempt.unreachableSince ? html` (unreachable since ${time(attempt.unreachableSince)})` : ''}</span>` : ''}${attempt.abandoned ? html` <span class="error">given up by a person</span>` : ''}`;
}

function attemptRow(attempt: AttemptSummary, previous: AttemptSummary | undefined, parts: WorkflowPanelParts): Safe {
  return html`<tr id="attempt-${attempt.delegationId}">
<th scope="row">${attempt.delegationId}${previous ? html`<div class="redelegation">re-delegated: ${reasonOf(previous)}</div>` : ''}</th>
<td class="wrap">${agentLabel(attempt.agentCardUrl, parts.agentNames)}</td>
<td class="mono">${attempt.taskId ?? '–'}</td>
<td class="mono">${attempt.messageId}</td>
<td>${stateCell(attempt)}</td>
<td>${attempt.error ? html`<span class="error">${attempt.error.code}: ${attempt.error.message}</span>` : '–'}</td>
<td class="number">${attempt.tries}</td>
<td>${attempt.nextTryAt ? html`next try ${time(attempt.nextTryAt)}` : time(parts.nextChecks.get(attempt.delegationId))}</td>
<td>${attempt.effect ? html`${badge(attempt.effect)} ${time(attempt.verifiedAt)}${attempt.evidence === undefined ? '' : evidenceList(attempt.evidence)}` : '–'}</td>
<td class="wrap">${attempt.resultText ?? ''}</td>
</tr>`;
}

const ATTEMPT_HEADERS = ['Attempt', 'Agent', 'Task id', 'messageId', 'State', 'Last error', 'Tries', 'Next check or try', 'Verification', 'Result'];

function attemptsTable(caption: string, attempts: AttemptSummary[], parts: WorkflowPanelParts, redelegations: boolean): Safe {
  if (attempts.length === 0) return html``;
  return html`<table class="attempts"><caption>${caption}</caption>
<thead><tr>${ATTEMPT_HEADERS.map((header) => html`<th scope="col">${header}</th>`)}</tr></thead>
<tbody>${attempts.map((attempt, index) => attemptRow(attempt, redelegations ? attempts[index - 1] : undefined, parts))}</tbody></table>`;
}

function stepsSection(view: WorkflowView, parts: WorkflowPanelParts): Safe {
  return html`<section aria-labelledby="steps-heading"><h2 id="steps-heading">Steps</h2><ol class="steps">${view.steps.map(
    (step) => html`<li><h3>${step.name}</h3>${step.attempts.length === 0 ? html`<p class="muted">Not started.</p>` : attemptsTable(`Attempts of ${step.name}`, step.attempts, parts, true)}</li>`,
  )}</ol></section>`;
}

function compensationsSection(view: WorkflowView, parts: WorkflowPanelParts): Safe {
  const compensations = view.steps.flatMap((step) => step.compensations).sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt) || a.delegationId.localeCompare(b.delegationId));
  if (compensations.length === 0) return html``;
  return html`<section aria-labelledby="compensations-heading"><h2 id="compensations-heading">Compensations, in the order they ran</h2>${attemptsTable('Compensations', compensations, parts, false)}</section>`;
}

/** Every dated event of the workflow, oldest first. */
function timelineSection(view: WorkflowView, names: ReadonlyMap<string, string>): Safe {
  const events: { at: number; text: string }[] = [{ at: Date.parse(view.createdAt), text: 'workflow started' }];
  const push = (at: string | undefined, text: string) => {
    const ms = parseAgentTimestamp(at);
    if (!Number.isNaN(ms)) events.push({ at: ms, text });
  };
  for (const attempt of view.steps.flatMap((step) => [...step.attempts, ...step.compensations])) {
    const what = attempt.kind === 'compensation' ? `compensation ${attempt.delegationId}` : `attempt ${attempt.delegationId}`;
    push(attempt.createdAt, `${what} journaled (agent ${agentName(attempt.agentCardUrl, names) ?? attempt.agentCardUrl})`);
    push(attempt.statusTimestamp, `${what}: agent reported ${attempt.state}`);
    push(attempt.finishedAt, `${what} finished ${attempt.state}`);
    push(attempt.verifiedAt, `${what} verified: effect ${attempt.effect}`);
  }
  if (Date.parse(view.updatedAt) > Date.parse(view.createdAt)) push(view.updatedAt, `workflow ${view.state}`);
  events.sort((a, b) => a.at - b.at);
  return html`<section aria-labelledby="timeline-heading"><h2 id="timeline-heading">Timeline</h2><ol class="timeline">${events.map((event) => html`<li>${time(event.at)} ${event.text}</li>`)}</ol></section>`;
}

/** The line under the heading: state, what it waits for, times. */
function summaryLine(view: WorkflowView): Safe {
  const waiting = view.state === 'NEEDS_ATTENTION' ? 'NEEDS_ATTENTION' : view.openQuestions[0]?.state;
  return html`<p class="summary">State ${badge(view.state)}${view.cancelRequested ? html` <span class="muted">cancel requested</span>` : ''}${waiting ? html` · Waiting for: ${waitingForText(waiting)}` : ''} · updated ${time(view.updatedAt)} · started ${time(view.createdAt)}</p>`;
}

/** The live part of the workflow page (polled with ETag), from one view. */
export function workflowPanel(view: WorkflowView, parts: WorkflowPanelParts): Safe {
  return html`${outcomeSection(view)}${summaryLine(view)}${cancelSection(view)}${attentionSection(view)}${questionsSection(view)}${stepsSection(view, parts)}${compensationsSection(view, parts)}${parts.history ?? historySection(view)}${timelineSection(view, parts.agentNames)}`;
}

/** The whole workflow page; `notice`: the confirmation (or refusal) of the action that led here (a post without script). */
export function workflowPage(view: WorkflowView, panel: Safe, notice?: { text: string; refused?: boolean }): string {
  const body = html`<h1>Workflow ${view.workflowId}</h1><div id="live">${panel}</div>`;
  return page(`Workflow ${view.workflowId}`, body, { live: `${pathOf(view.workflowId)}/panel`, notice: notice?.text, noticeRefused: notice?.refused });
}
