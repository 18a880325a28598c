/**
 * attack33b: a send lease left on an UNMARKED row by a run that is gone (it gave its unsent mark back, or noted its
 * agent unreachable, and died before its lease release; `ghost/send/1` here) must not let the next send leave without
 * the lease. Before: markSending-2.lua took the lease only when free (SET NX): the next run marked "lease elsewhere"
 * and sent anyway; once the ghost's lease ran out nobody held the send, the reconciler found the send settled
 * (`sendSettleMs` after the mark), searched while the agent still held our request (an agent that creates its task
 * when it answers, V2), found nothing and resent: two SendMessages. Real redis-server, real fleet, a raw JSON-RPC agent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { finished, ref, useFieldCases } from '../harness/field-cases.ts';
import { holdingSendHandlers } from '../harness/holding-agent.ts';

const h = useFieldCases();

async function staleLeaseThenSend(staleLeaseMs: number, holdMs: number, streamingSends: boolean) {
  const agent = await h.agentWith(holdingSendHandlers(holdMs));
  const prefix = h.newPrefix();
  const producer = h.producer(prefix);
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `${prefix}-1` });
  // The lease a gone send run left on the unmarked row (its worker has no liveness key: dead).
  expect(await producer.journal.lease(ref(id), 'acquire', 'ghost/send/1', staleLeaseMs)).toBe(true);
  await h.fleetFor(prefix, { reconcileIntervalMs: 300, streamingSends });
  const record = await finished(producer, id, holdMs + 30_000);
  return { agent, record };
}

describe('attack33b: a stale send lease on an unmarked row', () => {
  it('the next send takes the lease with its mark: one SendMessage while the agent holds it (was: two)', async () => {
    const { agent, record } = await staleLeaseThenSend(3_000, 12_000, false);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.state).toBe('COMPLETED');
    expect(record.resendCount).toBe(0);
  }, 60_000);

  it('property: whatever the stale lease left and how long the agent holds the send, plain or streaming: one SendMessage', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 500, max: 4_000 }), fc.integer({ min: 6_000, max: 10_000 }), fc.boolean(), async (staleLeaseMs, holdMs, streamingSends) => {
        const { agent, record } = await staleLeaseThenSend(staleLeaseMs, holdMs, streamingSends);
        expect(agent.count('SendMessage')).toBe(1);
        expect(record.state).toBe('COMPLETED');
        await h.closeFleetsAndProducers();
      }),
      { numRuns: 3 },
    );
  }, 200_000);
});
