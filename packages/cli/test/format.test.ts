/** The CLI's `show` reads the API's attention object (code, message, evidence), never prints it as text. */
import { expect, it } from 'vitest';
import { formatTimeline, type WorkflowView } from '../src/format.ts';

it('show prints NEEDS_ATTENTION with its message, code and evidence', () => {
  const view: WorkflowView = {
    workflowId: 'trip-9',
    state: 'NEEDS_ATTENTION',
    cancelRequested: true,
    attention: { code: 'CANCEL_LOST_RACE', message: 'flight.1 completed before the cancel', evidence: { taskId: 'T1' } },
    createdAt: '1970-01-01T00:00:00.000Z',
    updatedAt: '1970-01-01T00:00:00.000Z',
    steps: [],
    openQuestions: [],
  };
  const text = formatTimeline(view);
  expect(text).toContain('needs attention: flight.1 completed before the cancel (CANCEL_LOST_RACE)');
  expect(text).toContain('evidence {"taskId":"T1"}');
  expect(text).not.toContain('[object Object]');
});

it("show prints a person's decisions: the compensation given up (also on its attempt) and what was sent again", () => {
  const undo = { delegationId: 'flight.1.undo', attempt: 1, state: 'REJECTED', agentCardUrl: 'http://car/', createdAt: '1970-01-01T00:00:00.000Z', sendCount: 1, resendCount: 0, abandoned: true };
  const view: WorkflowView = {
    workflowId: 'trip-10',
    state: 'FAILED',
    cancelRequested: true,
    abandonedCompensations: ['flight.1.undo'],
    retryApproved: ['car.1'],
    createdAt: '1970-01-01T00:00:00.000Z',
    updatedAt: '1970-01-01T00:00:00.000Z',
    steps: [{ name: 'flight', attempts: [], compensations: [undo] }],
    openQuestions: [],
  };
  const text = formatTimeline(view);
  expect(text).toContain('  compensation given up by a person: flight.1.undo');
  expect(text).toContain('  sent again by a person: car.1');
  expect(text).toContain('      given up by a person: this undo will never happen');
  expect(formatTimeline({ ...view, abandonedCompensations: undefined, retryApproved: undefined, steps: [] })).not.toContain('by a person');
});
