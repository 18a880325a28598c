/**
 * Review14, property over the kind of a stopped question: `question.opened` (an answer link to a person) is emitted
 * for a parked question exactly when it is open by the one predicate every listing asks (`isStepStopped`, the twin of
 * stepStopped.lua): a compensation's always, a step's only while its workflow is not stopping (canceled, or another
 * step failed for good). Real redis-server and a real fleet's context (its journal, notify queue and options).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isStepStopped, type DelegationRecord } from '@durable-a2a/shared';
import { notifyQuestionOpened } from '../../packages/workers/src/notify/question.ts';
import { notificationMissing } from '../../packages/workers/src/notify/emit.ts';
import { useFieldCases } from '../harness/field-cases.ts';
import { intentRow } from '../harness/journal-rows.ts';
import { startWebhookReceiver } from '../harness/webhook-receiver.ts';

const h = useFieldCases();
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
type Stop = 'none' | 'cancel' | 'step-failed';

describe('question.opened follows isStepStopped', () => {
  // One run per kind and stop (every pair reached whatever the seed); the question's state drawn.
  const pairs = (['step', 'compensation'] as const).flatMap((kind) => (['none', 'cancel', 'step-failed'] as const).map((stop: Stop) => ({ kind, stop })));
  it.each(pairs)('property ($kind, stop $stop): question.opened is emitted exactly when the question is open (fails on fix14 for a step under either stop)', async ({ kind, stop }) => {
    const receiver = await startWebhookReceiver(SECRET);
    try {
      const prefix = h.newPrefix();
      const fleet = await h.fleetFor(prefix, { notify: { url: receiver.url, secret: SECRET, retry: { attempts: 2, backoffMs: 100 } } });
      const journal = fleet.context.journal;
      let counter = 0;
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('INPUT_REQUIRED' as const, 'AUTH_REQUIRED' as const), async (state) => {
          const ref = { workflowId: `wf-${kind}-${stop}-${++counter}`, delegationId: 'main.1' };
          const definition = JSON.stringify({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: 'https://agent.example/.well-known/agent-card.json', message: { text: 'x' } }] });
          await journal.createWorkflow(ref.workflowId, { state: 'RUNNING', definition, createdAt: '1000' }, { ...intentRow(ref.workflowId), kind });
          await journal.applyStatus(ref, { mode: 'event', state, taskId: `T-${ref.workflowId}`, statusTimestamp: '2026-01-01T10:00:01Z' });
          if (stop === 'cancel') await journal.updateWorkflow(ref.workflowId, { cancelRequested: true });
          if (stop === 'step-failed') await journal.updateWorkflow(ref.workflowId, { stopping: ['step car failed for good'] });
          const record = (await journal.getDelegation(ref)) as DelegationRecord;
          expect(record.questionKey).toBeTruthy();
          await notifyQuestionOpened(fleet.context, record, true);
          const input = { kind: 'question.opened' as const, workflowId: ref.workflowId, delegationId: ref.delegationId, occasion: record.questionKey! };
          const emitted = !(await notificationMissing(fleet.context, input));
          expect(emitted).toBe(!isStepStopped(kind, await journal.getWorkflow(ref.workflowId)));
          expect(emitted).toBe(kind === 'compensation' || stop === 'none');
        }),
        { numRuns: 4 },
      );
    } finally {
      await receiver.close();
    }
  });
});
