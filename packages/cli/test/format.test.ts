/** The CLI's `show` reads the API's attention object (code, message, evidence), never prints it as text. */
import { expect, it } from 'vitest';
import { formatTimeline, type WorkflowView } from '../src/format.ts';

it('show prints NEEDS_ATTENTION with its message, code and evidence', () => {
  const view: WorkflowView = {
    workflowId: 'trip-9',
    state: 'NEEDS_ATTENTION',
    cancelRequested: true,
    attention: { code: 'CANCEL_LOST_RACE', message: 'flight.1 completed before the cancel', evidence: { taskId: 'T1' } },
    createdAt: 0,
    updatedAt: 0,
    steps: [],
    openQuestions: [],
  };
  const text = formatTimeline(view);
  expect(text).toContain('needs attention: flight.1 completed before the cancel (CANCEL_LOST_RACE)');
  expect(text).toContain('evidence {"taskId":"T1"}');
  expect(text).not.toContain('[object Object]');
});
