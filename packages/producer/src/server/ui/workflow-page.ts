/**
 * The /ui workflow page: what a person needs to act (NEEDS_ATTENTION with
 * retry / abandon, open questions with an answer form), then the timeline,
 * each step's attempts (agent, task id, messageId, state, last error, tries,
 * next check, verification with evidence, re-delegation reason) and the
 * compensations in the order they ran. `workflowPanel` is the polled part.
 */
import type { AttemptSummary, OpenQuestion, WorkflowView } from '../../view.ts';
import { badge, html, page, time, type Safe } from './html.ts';
import { allowedResolveActions } from '../../calls/cancel.ts';
import { historySection } from './history-section.ts';

/** Evidence is shown as JSON, cut to this many characters (the API has all of it). */
const EVIDENCE_LIMIT = 1_000;

const pathOf = (workflowId: string) => `/ui/workflows/${encodeURIComponent(workflowId)}`;
const json = (value: unknown) => {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > EVIDENCE_LIMIT ? `${text.slice(0, EVIDENCE_LIMIT)}…` : text;
};

function attentionSection(view: WorkflowView): Safe {
  if (view.state !== 'NEEDS_ATTENTION') return html``;
  const action = `${pathOf(view.workflowId)}/resolve`;
  const compensationFailed = view.attention?.code === 'COMPENSATION_FAILED';
  return html`<section class="attention" aria-labelledby="attention-heading"><h2 id="attention-heading">A person must decide</h2>
<p>${view.attention ? `${view.attention.message} (${view.attention.code})` : 'The workflow cannot decide on its own.'}</p>
${view.attention?.evidence === undefined ? html`` : html`<pre class="evidence">${json(view.attention.evidence)}</pre>`}
${allowedResolveActions(view).includes('retry') ? html`<form method="post" action="${action}" data-action="resolve"><input type="hidden" name="action" value="retry">
<button type="submit">Retry</button> <span class="muted">${compensationFailed ? 'Send the failed compensation again as a new one (e.g. once its agent is fixed).' : 'Run the AMBIGUOUS attempts again as new attempts (the agent may have had the first).'}</span></form>` : html``}
<form method="post" action="${action}" data-action="resolve"><input type="hidden" name="action" value="abandon">
<button type="submit" class="danger">Abandon</button> <span class="muted">${compensationFailed ? 'Give this compensation up: its effect stays; undo the rest, then FAILED.' : 'Stop, and undo what has an effect (else FAILED).'}</span></form>
</section>`;
}

function questionForm(view: WorkflowView, question: OpenQuestion): Safe {
  const id = `answer-${question.delegationId}`;
  return html`<article class="question" id="question-${question.delegationId}" aria-labelledby="${id}-heading">
<h3 id="${id}-heading">Step ${question.step} asks ${badge(question.state)}</h3>
<blockquote class="agent-text">${question.text || '(the agent sent no text)'}</blockquote>
<p class="muted">task ${question.taskId ?? '–'} · asked ${question.askedAt ?? '–'}</p>
${question.previousReplyRefused ? html`<p class="error" role="alert">The agent refused the previous answer: ${question.previousReplyRefused}</p>` : ''}
<form method="post" action="${pathOf(view.workflowId)}/steps/${encodeURIComponent(question.step)}/reply" data-action="reply">
<label for="${id}">Your answer</label>
<textarea id="${id}" name="text" required rows="2"></textarea>
<button type="submit">Send answer</button>
</form></article>`;
}

function questionsSection(view: WorkflowView): Safe {
  if (view.openQuestions.length === 0) return html``;
  return html`<section aria-labelledby="questions-heading"><h2 id="questions-heading">Open questions</h2>${view.openQuestions.map((question) => questionForm(view, question))}</section>`;
}

/** Why an attempt was followed by another: its outcome and error. */
const reasonOf = (attempt: AttemptSummary) => `${attempt.delegationId} ended ${attempt.state}${attempt.error ? `: ${attempt.error.message}` : ''}`;

function attemptRow(attempt: AttemptSummary, previous: AttemptSummary | undefined, nextCheck: number | undefined): Safe {
  return html`<tr id="attempt-${attempt.delegationId}">
<th scope="row">${attempt.delegationId}${previous ? html`<div class="redelegation">re-delegated: ${reasonOf(previous)}</div>` : ''}</th>
<td class="wrap">${attempt.agentCardUrl}</td>
<td class="mono">${attempt.taskId ?? '–'}</td>
<td class="mono">${attempt.messageId}</td>
<td>${badge(attempt.state)}${attempt.held ? html` <span class="muted">held</span>` : ''}${attempt.progress === 'waiting for the agent' ? html` <span class="muted">waiting for the agent${attempt.unreachableSince ? html` (unreachable since ${attempt.unreachableSince})` : ''}</span>` : ''}${attempt.abandoned ? html` <span class="error">given up by a person</span>` : ''}</td>
<td>${attempt.error ? html`<span class="error">${attempt.error.code}: ${attempt.error.message}</span>` : '–'}</td>
<td class="number">${attempt.tries}</td>
<td>${attempt.nextTryAt ? html`next try ${attempt.nextTryAt}` : time(nextCheck)}</td>
<td>${attempt.effect ? html`${badge(attempt.effect)} <code class="evidence">${json(attempt.evidence)}</code> ${time(attempt.verifiedAt)}` : '–'}</td>
<td class="wrap">${attempt.resultText ?? ''}</td>
</tr>`;
}

const ATTEMPT_HEADERS = ['Attempt', 'Agent', 'Task id', 'messageId', 'State', 'Last error', 'Tries', 'Next check or try (UTC)', 'Verification', 'Result'];

function attemptsTable(caption: string, attempts: AttemptSummary[], nextChecks: ReadonlyMap<string, number>, redelegations: boolean): Safe {
  if (attempts.length === 0) return html``;
  return html`<table class="attempts"><caption>${caption}</caption>
<thead><tr>${ATTEMPT_HEADERS.map((header) => html`<th scope="col">${header}</th>`)}</tr></thead>
<tbody>${attempts.map((attempt, index) => attemptRow(attempt, redelegations ? attempts[index - 1] : undefined, nextChecks.get(attempt.delegationId)))}</tbody></table>`;
}

function stepsSection(view: WorkflowView, nextChecks: ReadonlyMap<string, number>): Safe {
  return html`<section aria-labelledby="steps-heading"><h2 id="steps-heading">Steps</h2><ol class="steps">${view.steps.map(
    (step) => html`<li><h3>${step.name}</h3>${step.attempts.length === 0 ? html`<p class="muted">Not started.</p>` : attemptsTable(`Attempts of ${step.name}`, step.attempts, nextChecks, true)}</li>`,
  )}</ol></section>`;
}

function compensationsSection(view: WorkflowView, nextChecks: ReadonlyMap<string, number>): Safe {
  const compensations = view.steps.flatMap((step) => step.compensations).sort((a, b) => a.createdAt - b.createdAt || a.delegationId.localeCompare(b.delegationId));
  if (compensations.length === 0) return html``;
  return html`<section aria-labelledby="compensations-heading"><h2 id="compensations-heading">Compensations, in the order they ran</h2>${attemptsTable('Compensations', compensations, nextChecks, false)}</section>`;
}

/** Every dated event of the workflow, oldest first. */
function timelineSection(view: WorkflowView): Safe {
  const events: { at: number; text: string }[] = [{ at: view.createdAt, text: 'workflow started' }];
  for (const attempt of view.steps.flatMap((step) => [...step.attempts, ...step.compensations])) {
    const what = attempt.kind === 'compensation' ? `compensation ${attempt.delegationId}` : `attempt ${attempt.delegationId}`;
    events.push({ at: attempt.createdAt, text: `${what} journaled (agent ${attempt.agentCardUrl})` });
    if (attempt.statusTimestampMs) events.push({ at: attempt.statusTimestampMs, text: `${what}: agent reported ${attempt.state}` });
    if (attempt.finishedAt) events.push({ at: attempt.finishedAt, text: `${what} finished ${attempt.state}` });
    if (attempt.verifiedAt) events.push({ at: attempt.verifiedAt, text: `${what} verified: effect ${attempt.effect}` });
  }
  if (view.updatedAt > view.createdAt) events.push({ at: view.updatedAt, text: `workflow ${view.state}` });
  events.sort((a, b) => a.at - b.at);
  return html`<section aria-labelledby="timeline-heading"><h2 id="timeline-heading">Timeline</h2><ol class="timeline">${events.map((event) => html`<li>${time(event.at)} ${event.text}</li>`)}</ol></section>`;
}

/** The live part of the workflow page (polled with ETag). */
export function workflowPanel(view: WorkflowView, nextChecks: ReadonlyMap<string, number>): Safe {
  return html`<p class="summary">State ${badge(view.state)}${view.cancelRequested ? html` <span class="muted">cancel requested</span>` : ''} · updated ${time(view.updatedAt)} · started ${time(view.createdAt)}</p>
${view.failure?.length ? html`<div class="failure"><h2>Why it failed</h2><ul>${view.failure.map((reason) => html`<li>${reason}</li>`)}</ul></div>` : ''}
${attentionSection(view)}${questionsSection(view)}${stepsSection(view, nextChecks)}${compensationsSection(view, nextChecks)}${timelineSection(view)}${historySection(view)}`;
}

/** The whole workflow page. */
export function workflowPage(view: WorkflowView, panel: Safe): string {
  const body = html`<h1>Workflow ${view.workflowId}</h1><div id="live">${panel}</div>`;
  return page(`Workflow ${view.workflowId}`, body, { live: `${pathOf(view.workflowId)}/panel` });
}
