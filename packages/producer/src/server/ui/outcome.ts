/**
 * The heading of a workflow page: what became of the workflow, in a person's words, from its view alone. One
 * heading per outcome, so a workflow cancelled on request and fully undone is never headed as a failure:
 *   completed · cancelled and undone · cancelled (nothing to undo) · failed (and undone) · needs a person
 *   (an answer, a decision) · running · undoing.
 */
import type { WorkflowView } from '../../view.ts';
import { html, type Safe } from './html.ts';

/** The outcome kinds; each has its own style (`outcome-<kind>`). */
export type OutcomeKind = 'completed' | 'cancelled' | 'failed' | 'attention' | 'question' | 'running';

export interface Outcome {
  kind: OutcomeKind;
  heading: string;
  summary: string;
  /** What the reasons are called under the heading ("Why", "What happened"). */
  reasonsLabel: string;
}

/** The outcome of a workflow (pure: the view alone decides). */
export function outcomeOf(view: Pick<WorkflowView, 'state' | 'cancelRequested' | 'openQuestions'>): Outcome {
  const cancelled = view.cancelRequested;
  switch (view.state) {
    case 'COMPLETED':
      return { kind: 'completed', heading: 'Completed', summary: 'Every step completed.', reasonsLabel: 'Notes' };
    case 'COMPENSATED':
      return cancelled
        ? { kind: 'cancelled', heading: 'Cancelled and undone', summary: 'Stopped on request; every step that had an effect was undone.', reasonsLabel: 'What happened' }
        : { kind: 'failed', heading: 'Failed, and undone', summary: 'A step failed; every earlier step that had an effect was undone.', reasonsLabel: 'Why it failed' };
    case 'CANCELED':
      return { kind: 'cancelled', heading: 'Cancelled', summary: 'Stopped on request before any step had an effect to undo.', reasonsLabel: 'What happened' };
    case 'FAILED':
      return { kind: 'failed', heading: 'Failed', summary: cancelled ? 'Stopped on request, but not everything could be undone.' : 'The workflow could not finish.', reasonsLabel: 'Why it failed' };
    case 'NEEDS_ATTENTION':
      return { kind: 'attention', heading: 'Needs a person: a decision', summary: 'The workflow cannot decide on its own; see below.', reasonsLabel: 'Notes' };
    case 'COMPENSATING':
      return { kind: 'running', heading: cancelled ? 'Cancelling: undoing what was done' : 'Failed: undoing what was done', summary: 'Compensations are running.', reasonsLabel: cancelled ? 'What happened' : 'Why it failed' };
    default:
      if (view.openQuestions.length > 0) return { kind: 'question', heading: 'Needs a person: an answer', summary: 'An agent asks a question; answer it below.', reasonsLabel: 'Notes' };
      return { kind: 'running', heading: cancelled ? 'Cancelling' : 'Running', summary: cancelled ? 'Cancel requested: running tasks are being cancelled.' : 'The steps are under way.', reasonsLabel: 'Notes' };
  }
}

/** The outcome section: heading, summary and the workflow's recorded reasons. */
export function outcomeSection(view: WorkflowView): Safe {
  const outcome = outcomeOf(view);
  const reasons = view.failure ?? [];
  return html`<section class="outcome outcome-${outcome.kind}" aria-labelledby="outcome-heading"><h2 id="outcome-heading">${outcome.heading}</h2>
<p>${outcome.summary}</p>${reasons.length > 0 ? html`<h3>${outcome.reasonsLabel}</h3><ul class="reasons">${reasons.map((reason) => html`<li>${reason}</li>`)}</ul>` : ''}</section>`;
}
