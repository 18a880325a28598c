/**
 * retrygive35, fault 1 (the kind "a retry of the same send job gives back, or sends again under, a mark an earlier
 * attempt wrote"): the first attempt of a send job marks, may send (the agent takes SendMessage: a NON-deduplicating
 * agent, each SendMessage is a new task), and fails before the answer is journaled (the fleet's `onCrashPoint` hook
 * throws there: the job fails and BullMQ retries the SAME job). The retry knows of no SendMessage of its own; it must
 * neither give the earlier mark back nor send again: the marked row goes to the reconciler's search (adopts the task
 * found by our messageId; resends the same messageId only when the agent is shown not to have it).
 * Found on main: no fault. The retry reads the mark and hands the row over (`sendMessage`: 'may-have-sent'),
 * markSending-2.lua refuses a second mark while one stands (MAY_HAVE_SENT), and giveBackMark-1.lua compares the
 * writing run's fence (each claiming mark moves it) and the mark's sendStartedAt. Kept as a regression: one SendMessage
 * per messageId, one task at the agent, wherever the first attempt fails and however often it stalled before.
 * The same kind from the other side (retrygive35): a try whose SendMessage never left (ECONNREFUSED after its mark)
 * clears the mark it wrote with that mark (noteUnreachable-1.lua compares its sendStartedAt and version), so each
 * marked try is noted and waits for the next; without the mark passed the note is refused (a mutation fails here).
 * Real redis-server, real fleet and BullMQ retries, a scripted raw JSON-RPC agent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CrashPoint } from '@durable-a2a/workers';
import { createServer, type Server } from 'node:http';
import { finished, recordOf, ref, useFieldCases } from '../harness/field-cases.ts';
import { bookingSendHandlers } from '../harness/holding-agent.ts';
import { eventually } from '../harness/fleet.ts';
import { findFreePort } from '../harness/ports.ts';

const h = useFieldCases();

type FailAt = Extract<CrashPoint, 'send.after-mark' | 'send.after-request'>;

/**
 * The first attempt's faults, told by `onCrashPoint` and the fleet's clock: `stalls` times it stalls past the guard
 * right after its mark (the clock jumps 1.5 s: the mark is given back, the run marks again), then it throws at `failAt`
 * (the job fails; BullMQ retries it). Only once: the retry runs clean.
 */
function firstAttemptFaults(failAt: FailAt, stalls: number) {
  let skew = 0;
  let stalled = 0;
  let failed = false;
  const now = () => Date.now() + skew;
  const atPoint = (point: CrashPoint) => {
    if (failed) return;
    if (point === 'send.after-mark' && stalled < stalls) {
      stalled++;
      skew += 1_500;
      return;
    }
    if (point === failAt) {
      failed = true;
      throw new Error(`injected failure at ${point}: the attempt ends before its answer is journaled`);
    }
  };
  return { now, atPoint, failed: () => failed };
}

async function retriedAfterFailure(failAt: FailAt, stalls: number) {
  const agent = bookingSendHandlers();
  const scripted = await h.agentWith(agent.handlers);
  const faults = firstAttemptFaults(failAt, stalls);
  const prefix = h.newPrefix();
  const producer = h.producer(prefix);
  await h.fleetFor(prefix, { now: faults.now, onCrashPoint: faults.atPoint, reconcileIntervalMs: 300 });
  const { id } = await producer.delegate({ agent: scripted.cardUrl, text: 'book', idempotencyKey: `${prefix}-1` });
  const record = await finished(producer, id, 45_000);
  return { agent, scripted, record, faults, messageId: (await recordOf(producer, id))!.messageId };
}

describe('a retry of the same send job after its first attempt marked (and maybe sent)', () => {
  it('sent, then failed before the answer was journaled: the retry hands the mark to the search, which adopts the task (one SendMessage)', async () => {
    const { agent, record, faults, messageId } = await retriedAfterFailure('send.after-request', 0);
    expect(faults.failed()).toBe(true);
    expect(record.state).toBe('COMPLETED');
    expect(agent.sends.get(messageId)).toBe(1);
    expect(agent.tasks).toHaveLength(1);
    expect(record.taskId).toBe('T1');
    expect(record.resendCount).toBe(0);
  }, 60_000);

  it('property: whichever point the first attempt failed at, after however many give-backs of its own: one SendMessage per messageId', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<FailAt>('send.after-mark', 'send.after-request'), fc.integer({ min: 0, max: 2 }), async (failAt, stalls) => {
        const { agent, record, faults, messageId } = await retriedAfterFailure(failAt, stalls);
        expect(faults.failed()).toBe(true);
        expect(record.state).toBe('COMPLETED');
        expect([...agent.sends.keys()]).toEqual([messageId]);
        expect(agent.sends.get(messageId)).toBe(1);
        expect(agent.tasks).toHaveLength(1);
        // Sent before the failure: adopted, never resent. Not sent: resent once, after the search showed it absent.
        expect(record.resendCount).toBe(failAt === 'send.after-request' ? 0 : 1);
        await h.closeFleetsAndProducers();
      }),
      { numRuns: 6, examples: [['send.after-request', 1], ['send.after-mark', 0]] },
    );
  }, 400_000);
});

/**
 * The agent's card served at its own address, every interface moved to `port` (where nothing listens): the card is
 * read, the send is marked, and its SendMessage is refused at connect (ECONNREFUSED: it never left).
 */
async function cardPointingAt(cardUrl: string, agentUrl: string, port: number): Promise<{ cardUrl: string; server: Server }> {
  const text = (await (await fetch(cardUrl)).text()).replaceAll(agentUrl, `http://127.0.0.1:${port}`);
  const server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(text));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('card server: no port');
  return { cardUrl: `http://127.0.0.1:${address.port}/.well-known/agent-card.json`, server };
}

describe('a marked try whose SendMessage never left (the agent unreachable)', () => {
  it('clears its own mark with the mark it wrote (noteUnreachable compares it): each try noted, waiting for the next', async () => {
    const agent = bookingSendHandlers();
    const scripted = await h.agentWith(agent.handlers);
    const closed = await findFreePort();
    const moved = await cardPointingAt(scripted.cardUrl, scripted.url, closed);
    try {
      const prefix = h.newPrefix();
      const producer = h.producer(prefix);
      await h.fleetFor(prefix, { reconcileIntervalMs: 300, unreachableBackoff: { baseMs: 200, capMs: 1_000 } });
      const { id } = await producer.delegate({ agent: moved.cardUrl, text: 'book', idempotencyKey: `${prefix}-1` });
      // Each marked try is noted: the mark cleared (the row unmarked between tries), its try counted as unreachable.
      const row = await eventually(async () => {
        const record = await recordOf(producer, id);
        return record !== undefined && (record.unreachableCount ?? 0) >= 2 && record.sendStartedAt === undefined && record;
      }, 'two marked tries noted unreachable', 30_000);
      expect(row.state).toBe('INTENT');
      expect(row.sendCount).toBeGreaterThanOrEqual(2);
      expect(row.unsentTries ?? 0).toBe(0);
      expect(row.error).toMatchObject({ delivery: 'not-sent' });
      expect(agent.sends.size).toBe(0);
      expect((await producer.journal.getDelegation(ref(id)))?.state).toBe('INTENT');
    } finally {
      await new Promise((resolve) => moved.server.close(resolve));
    }
  }, 60_000);
});
