/**
 * The crash window of a refused answer's second `question.opened`: the refusal is journaled (markReply 'refused'), the
 * worker dies before the emit. The parked row's next re-read (`park` → `notifyQuestionOpened` with `asked` false)
 * finds the event missing and emits it, once: its id is stable (`refused:` + SHA-256 of the question key and the
 * answer's messageId), so a second re-read adds nothing and the receiver gets one event for the refusal. Real
 * redis-server, a real fleet's context (journal, notify queue) and a webhook receiver.
 */
import { describe, expect, it } from 'vitest';
import { notificationEventId } from '@durable-a2a/shared';
import { notificationMissing } from '../../packages/workers/src/notify/emit.ts';
import { notifyQuestionOpened, questionOpened } from '../../packages/workers/src/notify/question.ts';
import { eventually } from '../harness/fleet.ts';
import { useFieldCases } from '../harness/field-cases.ts';
import { intentRow } from '../harness/journal-rows.ts';
import { startWebhookReceiver } from '../harness/webhook-receiver.ts';

const h = useFieldCases();
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const CARD = 'https://agent.example/.well-known/agent-card.json';

describe('a refused answer, the worker gone before the second question.opened', () => {
  it('the re-read emits it once, with the stable refused: id and the reason; a second re-read adds nothing', async () => {
    const receiver = await startWebhookReceiver(SECRET);
    try {
      const fleet = await h.fleetFor(h.newPrefix(), { notify: { url: receiver.url, secret: SECRET, retry: { attempts: 2, backoffMs: 100 } } });
      const journal = fleet.context.journal;
      const ref = { workflowId: 'wf-refused-crash', delegationId: 'main.1' };
      const definition = JSON.stringify({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: CARD, message: { text: 'x' } }] });
      await journal.createWorkflow(ref.workflowId, { state: 'RUNNING', definition, createdAt: String(Date.now()) }, { ...intentRow(ref.workflowId), agentCardUrl: CARD, createdAt: String(Date.now()) });
      await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T-1', statusMessage: { messageId: 'q1', role: 'ROLE_AGENT', parts: [{ text: 'which room?' }] }, statusTimestamp: new Date().toISOString() });
      await journal.recordReply(ref, 'a1', { parts: [{ text: 'room 12' }] });
      const fence = await journal.claim(ref, 'test/reply');
      expect(await journal.takeReplySend(ref, fence, 'a1', 'tok', 60_000)).toBe('taken');
      // The refusal journaled; the worker dies here (no emit).
      expect(await journal.markReply(ref, fence, 'a1', 'refused', 'request over the agent\'s size limit', { token: 'tok' })).toBe(true);
      const record = (await journal.getDelegation(ref))!;
      const eventId = notificationEventId(questionOpened(fleet.context, { ...record, questionKey: record.questionKey! }));
      expect(await journal.notification(ref.workflowId, eventId)).toBeUndefined();
      // The re-read of the parked row (what `park` does when the row was already parked on this question).
      await notifyQuestionOpened(fleet.context, record, false);
      expect(await journal.notification(ref.workflowId, eventId)).toBeDefined();
      const delivered = await eventually(async () => {
        const bodies = receiver.received.filter((notification) => notification.verified).map((notification) => JSON.parse(notification.body) as { id: string; data: Record<string, unknown> });
        return bodies.find((body) => body.id === eventId);
      }, 'the second question.opened delivered', 10_000);
      expect(delivered.data).toMatchObject({ questionKey: 'q1', previousReplyRefused: 'request over the agent\'s size limit' });
      // A second re-read finds it journaled: nothing is enqueued again (and its job id is the event id).
      const input = questionOpened(fleet.context, { ...record, questionKey: record.questionKey! });
      expect(await notificationMissing(fleet.context, input)).toBe(false);
      await notifyQuestionOpened(fleet.context, record, false);
      expect(receiver.received.filter((notification) => (JSON.parse(notification.body) as { id: string }).id === eventId)).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});
