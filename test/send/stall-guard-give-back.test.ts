/**
 * Crash window 8's stall guard, at a busy agent (stallguard30): a send run held more than 1 s between its "may have
 * been sent" mark and the request stops before sending. It KNOWS nothing left (markSending-2.lua lets only one mark
 * stand, and this run did not send under it), yet the old guard left the marked row to the reconciler, whose search
 * for our messageId at an agent listing more recent tasks than `maxListTasksCalls` pages could not prove absence:
 * AMBIGUOUS, a person asked about a message that never left (seen in `BENCH_RECOVERY_IN_FLIGHT=10000 pnpm bench
 * recovery`). Now the run gives its own mark back (giveBackMark-1.lua, compare-and-set on the mark) and sends under a
 * fresh one: COMPLETED, exactly one SendMessage, no resend counted, no search.
 * The stall is the fleet's injectable clock jumping 1.5 s right after the mark is journaled (the fleet's
 * `onCrashPoint` hook at `send.after-mark`; no sleeps): the same as a worker held 1.5 s from there, for every reader of
 * the fleet's clock. Real redis-server, real fleet, a scripted raw JSON-RPC agent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CrashPoint } from '@durable-a2a/workers';
import { finished, recordOf, ref, useFieldCases } from '../harness/field-cases.ts';
import { task, userMessage } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** Another client's task, its status just now. */
const other = (id: string) => task(id, 'COMPLETED', { contextId: `ctx-${id}`, timestamp: new Date().toISOString(), history: [userMessage(`m-${id}`)] });

/**
 * A clock that runs `jumpMs` ahead from its `nth` read after a send's mark is journaled (0: at once), `times` times
 * over (each mark of the run again): a worker stalled there. The mark is told by the fleet's `onCrashPoint` hook at
 * `send.after-mark` (pass `atPoint` as that option).
 */
function stallingClock(jumpMs: number, nth = 0, times = 1) {
  let skew = 0;
  let readsSinceMark: number | undefined;
  let stalls = 0;
  const stall = () => {
    skew += jumpMs;
    stalls++;
    readsSinceMark = undefined;
  };
  const now = () => {
    if (readsSinceMark !== undefined && ++readsSinceMark >= nth) stall();
    return Date.now() + skew;
  };
  const atPoint = (point: CrashPoint) => {
    if (point !== 'send.after-mark' || stalls >= times) return;
    readsSinceMark = 0;
    if (nth === 0) stall();
  };
  return { now, atPoint, stalls: () => stalls };
}

/** A busy agent: every ListTasks page is full of other clients' recent tasks and names a next page (more than 10 pages). */
function busyHandlers() {
  let page = 0;
  return {
    ListTasks: () => {
      page++;
      const tasks = Array.from({ length: 50 }, (_, index) => other(`X${page}-${index}`));
      return { result: { tasks, nextPageToken: `page-${page + 1}`, pageSize: 50, totalSize: 10_000 } };
    },
    GetTask: (params: { id: string }) => ({ result: other(params.id) }),
    SendMessage: (params: any) => ({ result: { task: task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'the booking' } }) } }),
  };
}

describe('stall guard at a busy agent: a send held past the guard after its mark', () => {
  it('gives its unsent mark back and sends once under a fresh mark: COMPLETED, one SendMessage, no resend, never AMBIGUOUS', async () => {
    const agent = await h.agentWith(busyHandlers());
    const clock = stallingClock(1_500);
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, { now: clock.now, onCrashPoint: clock.atPoint });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `${prefix}-1` });
    const record = await finished(producer, id, 30_000);
    expect(clock.stalls()).toBe(1);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.resendCount).toBe(0);
    expect(record.sendCount).toBe(1);
    // The reconciler never had to search for a message that never left.
    expect(agent.count('ListTasks')).toBe(0);
    expect((await recordOf(producer, id))?.taskId).toBe('T1');
  }, 45_000);

  it('property: wherever the stall falls after the mark, however often, plain or streaming send: one SendMessage, no resend, never AMBIGUOUS', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 1, max: 4 }), fc.boolean(), async (nth, times, streamingSends) => {
        const agent = await h.agentWith(busyHandlers());
        const clock = stallingClock(1_500, nth, times);
        const prefix = h.newPrefix();
        const producer = h.producer(prefix);
        await h.fleetFor(prefix, { now: clock.now, onCrashPoint: clock.atPoint, streamingSends, reconcileIntervalMs: 300 });
        const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `${prefix}-1` });
        const record = await finished(producer, id, 40_000);
        // Stalled right at the mark: every stall asked for happened before a request (each a mark given back).
        if (nth === 0) expect(clock.stalls()).toBe(times);
        expect(record.state).toBe('COMPLETED');
        expect(agent.count('SendMessage')).toBe(1);
        expect(record.resendCount).toBe(0);
        expect(record.sendCount).toBe(1);
        expect(agent.count('ListTasks')).toBe(0);
        await h.closeFleetsAndProducers();
      }),
      // Past MAX_MARKS_GIVEN_BACK (3) stalls in one run: the unmarked row goes to the reconciler, which enqueues the send again.
      { numRuns: 8, examples: [[0, 1, false], [0, 1, true], [0, 4, false], [2, 2, true]] },
    );
  }, 300_000);

  it('a streaming send refused (-32601, nothing created) without the send lease gives its mark back too: COMPLETED by the plain send once the lease is free, one SendMessage, no resend, no search', async () => {
    // No SendStreamingMessage handler: the agent answers -32601 (the spec's own code, effect none) although its card
    // claims streaming. The send lease is another holder's when the run marks (a run that gave its mark back and died
    // before releasing it), so the refusal finds the lease not held: before, the marked row went to the reconciler,
    // whose search at this busy agent could not prove absence (AMBIGUOUS).
    const agent = await h.agentWith(busyHandlers());
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `${prefix}-1` });
    expect(await producer.journal.lease(ref(id), 'acquire', 'a-dead-run', 1_500)).toBe(true);
    await h.fleetFor(prefix, { streamingSends: true, reconcileIntervalMs: 300 });
    const record = await finished(producer, id, 40_000);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SendStreamingMessage')).toBeGreaterThanOrEqual(1);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.resendCount).toBe(0);
    expect(agent.count('ListTasks')).toBe(0);
  }, 60_000);
});
