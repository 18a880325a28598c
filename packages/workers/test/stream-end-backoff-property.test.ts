/**
 * A stream that ends before a finished state is followed again only by the progress rule (`progressNext`: the follow
 * backoff, counted), never by a route to an immediate resubscribe; only a stream ended at an open question parks.
 * The pure core with a simulated clock: each cycle is one SubscribeToTask that ends (`stream-ended`), the read the
 * core asks for (one GetTask: `task-read` in the cycle, the agent showing the same state), and the progress rule's
 * delay before the next subscription. Before the fix, a row whose question had our reply delivered (the agent still
 * showing it, INPUT_REQUIRED or AUTH_REQUIRED) was routed from `stream-ended` to `follow` with no delay, uncounted.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { TaskState } from '@durable-a2a/a2a';
import { journalStateOf, type DelegationRecord, type JournalState } from '@durable-a2a/shared';
import { progressNext, questionOpen, routeOf, type Policy } from '../src/delegation/core/policy.ts';
import { transition } from '../src/delegation/core/transitions.ts';

const NOW = 1_800_000_000_000;
const BACKOFF = { baseMs: 200, capMs: 1_000 };

/** The row's reply to its question q1: none, journaled but not delivered, delivered, or refused (the question open again). */
type Reply = 'none' | 'pending' | 'sending' | 'sent' | 'refused';

const rowIn = (state: JournalState, reply: Reply): DelegationRecord =>
  ({
    workflowId: 'wf', delegationId: 'main.1', step: 'main', kind: 'step', attempt: 1,
    agentCardUrl: 'http://127.0.0.1:1/.well-known/agent-card.json', messageId: 'M1', requestedContextId: 'C1', contextRefused: false,
    state, message: { parts: [{ text: 'book' }] }, protocolErrorCount: 0, push: false, held: false, createdAt: NOW - 10_000, updatedAt: NOW - 5_000,
    sendCount: 1, resendCount: 0, unreachableCount: 0, unsentTries: 0, provenAbsentSends: 0, version: 7, fence: 2, notFoundCount: 0, noProgressCount: 0,
    taskId: 'T1', contextId: 'C1', sendStartedAt: NOW - 9_000, questionKey: 'q1',
    ...(reply === 'none' ? {} : { replyMessageId: 'R1', replyState: reply, ...(reply === 'refused' ? {} : { replyForQuestion: 'q1' }) }),
  }) as DelegationRecord;

/**
 * `endings` stream endings of a row in `wire` (the agent shows that state each time) with `reply`; the simulated
 * clock advances only by the delays the core decides. Returns when each subscription started, and whether the row parked.
 */
function simulate(wire: TaskState, reply: Reply, endings: readonly string[], randoms: readonly number[]) {
  let now = NOW;
  let draw = 0;
  const policy: Policy = {
    now: () => now, random: () => randoms[draw++ % randoms.length]!, followBackoff: BACKOFF, unreachableBackoff: BACKOFF,
    slowPollAfterMs: 60_000, slowPollMs: 5_000, noProgressWindowMs: 600_000, unacceptableAnswerLimit: 3, reconcileIntervalMs: 1_000,
    notFoundThreshold: 3, notFoundWindowMs: 1_000, sendAttempts: 3, sendSettleMs: 1_000,
  };
  const record = rowIn(journalStateOf(wire), reply);
  const since = now;
  // When each subscription starts (simulated ms); each is one SubscribeToTask and at most one GetTask after it.
  const subscriptions: { at: number }[] = [];
  for (const [cycle, how] of endings.entries()) {
    subscriptions.push({ at: now });
    const ended = transition(record, { kind: 'stream-ended', how }, policy);
    if (ended.next.kind === 'route') {
      // A route from a stream's end is taken only where it cannot resubscribe: an open question parks.
      expect(routeOf(record, ended.next.plan ?? {}, false).kind).toBe('park');
      return { subscriptions, parked: true };
    }
    expect(ended.next.kind).toBe('read-once');
    const read = transition(record, { kind: 'task-read', task: { id: 'T1', contextId: 'C1', status: { state: wire } }, call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'after the stream', cycle: true }, policy);
    expect(read.next.kind).toBe('progress');
    if (read.next.kind !== 'progress') break;
    // Nothing new: the journal counts the cycle (the first one after the reply's route counts as progress).
    const verdict = progressNext({ count: cycle, since, unacceptableInRow: 0 }, read.next, record, policy);
    if (verdict.kind === 'needs-person') break;
    expect(['follow', 'slow-poll']).toContain(verdict.kind);
    now += verdict.kind === 'follow' ? (verdict.plan.delayMs ?? 0) : verdict.kind === 'slow-poll' ? verdict.delayMs : 0;
  }
  return { subscriptions, parked: false };
}

const wires: TaskState[] = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'];
const replies: Reply[] = ['none', 'pending', 'sending', 'sent', 'refused'];

describe('a stream ending before a finished state is followed with the backoff, counted', () => {
  it('case: the agent shows the question we answered (reply delivered), each stream interrupted: backed off, not an immediate resubscribe (was: route → follow at once)', () => {
    const { subscriptions, parked } = simulate('TASK_STATE_INPUT_REQUIRED', 'sent', Array.from({ length: 20 }, () => 'interrupted'), [0.9]);
    expect(parked).toBe(false);
    // Twenty streams take seconds of backoff, not none.
    expect(subscriptions.at(-1)!.at - NOW).toBeGreaterThan(5 * BACKOFF.capMs);
  });

  it('property: any state short of finished, any reply state, any endings: a route parks only on an open question, and the calls within any window are bounded by the backoff', () => {
    const endings = fc.array(fc.constantFrom('interrupted', 'closed', 'unterminated', 'empty'), { minLength: 1, maxLength: 40 });
    // Random draws at least 1/2: the full-jitter delay at least half its bound, so a window's bound is exact.
    const randoms = fc.array(fc.double({ min: 0.5, max: 0.999, noNaN: true }), { minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(fc.constantFrom(...wires), fc.constantFrom(...replies), endings, randoms, (wire, reply, ends, draws) => {
        const record = rowIn(journalStateOf(wire), reply);
        const { subscriptions, parked } = simulate(wire, reply, ends, draws);
        // Parks only when the row's question is open and a stream ended at it.
        expect(parked).toBe(questionOpen(record) && ends.includes('interrupted'));
        // Within any window of capMs after the backoff reached its cap (7 cycles: 200·2^n ≥ 1,000 from n = 3, at least
        // a 1/2 draw), at most 2 subscriptions start; the first 7 at most once each, whatever their delays.
        for (const [i, first] of subscriptions.entries()) {
          if (i < 7) continue;
          const inWindow = subscriptions.filter((each) => each.at >= first.at && each.at < first.at + BACKOFF.capMs);
          expect(inWindow.length).toBeLessThanOrEqual(2);
        }
      }),
      {
        numRuns: 300,
        seed: Number(process.env.FAST_CHECK_SEED ?? 23),
        examples: [
          ['TASK_STATE_INPUT_REQUIRED', 'sent', ['interrupted', 'interrupted', 'interrupted'], [0.5]],
          ['TASK_STATE_AUTH_REQUIRED', 'sent', ['interrupted', 'closed', 'interrupted'], [0.75]],
          ['TASK_STATE_INPUT_REQUIRED', 'pending', ['interrupted'], [0.5]],
          ['TASK_STATE_INPUT_REQUIRED', 'refused', ['interrupted'], [0.5]],
          ['TASK_STATE_SUBMITTED', 'none', ['interrupted', 'closed'], [0.5]],
          ['TASK_STATE_WORKING', 'sent', Array.from({ length: 30 }, () => 'closed'), [0.5]],
        ],
      },
    );
  });
});
