/**
 * Journal rows for tests that drive the journal directly (no fleet): a first attempt's INTENT row as the
 * producer would journal it.
 */

/** The INTENT row of delegation `delegationId` (step `main`, attempt 1) of `workflowId`, for `createWorkflow` / `createIntent`. */
export const intentRow = (workflowId: string, delegationId = 'main.1') => ({
  workflowId,
  delegationId,
  step: 'main',
  kind: 'step',
  attempt: '1',
  agentCardUrl: 'http://agent.example/.well-known/agent-card.json',
  messageId: `m-${workflowId}`,
  requestedContextId: `c-${workflowId}`,
  state: 'INTENT',
  message: JSON.stringify({ parts: [{ text: 'book a flight' }] }),
  createdAt: '1000',
  updatedAt: '1000',
  version: '1',
});
