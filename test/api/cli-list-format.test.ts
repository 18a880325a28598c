/**
 * Kind: `list` hid what a workflow waits on (a RUNNING workflow whose step asks a question showed RUNNING) and had no
 * header row. Property over any workflow view: one header row with as many columns as every line; the state column is
 * the open question's state (INPUT_REQUIRED / AUTH_REQUIRED, the `--state` filter's names) while RUNNING with a
 * question, else the workflow's state.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WORKFLOW_LINE_HEADER, formatWorkflowLine, type WorkflowView } from '../../packages/cli/src/format.ts';

const STATES = ['RUNNING', 'COMPENSATING', 'COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED', 'NEEDS_ATTENTION'];
const question = fc.record({ step: fc.constantFrom('main', 'pay'), delegationId: fc.constant('main.1'), state: fc.constantFrom('INPUT_REQUIRED', 'AUTH_REQUIRED'), text: fc.string() });
const viewArb: fc.Arbitrary<WorkflowView> = fc.record({
  workflowId: fc.stringMatching(/^[a-z0-9-]{1,20}$/),
  state: fc.constantFrom(...STATES),
  cancelRequested: fc.boolean(),
  createdAt: fc.constant('1970-01-01T00:00:00.000Z'),
  updatedAt: fc.constant('1970-01-01T00:00:00.000Z'),
  steps: fc.array(fc.record({ name: fc.constant('main'), attempts: fc.constant([]), compensations: fc.constant([]) }), { maxLength: 3 }),
  openQuestions: fc.array(question, { maxLength: 2 }),
}) as fc.Arbitrary<WorkflowView>;

describe('list lines', () => {
  it('property: the header has the columns of every line; the state column shows what a RUNNING workflow waits on', () => {
    const waitingExample = { workflowId: 'cli-asks', state: 'RUNNING', cancelRequested: false, createdAt: '', updatedAt: '', steps: [], openQuestions: [{ step: 'main', delegationId: 'main.1', state: 'INPUT_REQUIRED', text: 'Window or aisle?' }] } as WorkflowView;
    fc.assert(
      fc.property(viewArb, (view) => {
        const columns = formatWorkflowLine(view).split('\t');
        expect(columns).toHaveLength(WORKFLOW_LINE_HEADER.split('\t').length);
        expect(columns[0]).toBe(view.workflowId);
        expect(columns[1]).toBe(view.state === 'RUNNING' && view.openQuestions.length > 0 ? view.openQuestions[0]!.state : view.state);
      }),
      { examples: [[waitingExample], [{ ...waitingExample, openQuestions: [] }], [{ ...waitingExample, state: 'NEEDS_ATTENTION' }]] },
    );
  });
});
