/**
 * Property test of the progress rule (no livelock, docs/agents.md "Progress rule"; packages/workers/src/delegation/progress.ts):
 * for random sequences of observations that bring nothing new (snapshot-only streams, keep-alive-only
 * streams, refused subscriptions, broken `data:`, foreign events; the same GetTask answer, a -32603 on every
 * GetTask, a state nobody can read), a delegation makes at most 2 agent calls per (scaled) minute once its
 * first (scaled) minute without progress is over, and ends AMBIGUOUS (workflow NEEDS_ATTENTION) after the
 * no-progress window with the evidence: what was observed, how many times, since when.
 * Scaled settings: a "minute" is `slowPollAfterMs` = `slowPollMs` = 1 s; the window is 4 s.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventually } from '../harness/fleet.ts';
import { useFieldCases } from '../harness/field-cases.ts';
import { ERR, ev, task, taskEvent, type ScriptedAnswer, type ScriptedRequest } from '../harness/scripted-agent.ts';

const h = useFieldCases();

const SETTINGS = {
  followBackoff: { baseMs: 50, capMs: 400 },
  slowPollAfterMs: 1_000,
  slowPollMs: 1_000,
  noProgressWindowMs: 4_000,
  streamQuietMs: 400,
};

const STREAMS = ['snapshotOnly', 'keepAliveOnly', 'refused', 'badData', 'foreignEvent'] as const;
const READS = ['sameWorking', 'internalError', 'unknownState'] as const;
type StreamKind = (typeof STREAMS)[number];
type ReadKind = (typeof READS)[number];

const frame = (result: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 1, result });

function streamAnswer(kind: StreamKind, taskId: string): ScriptedAnswer {
  switch (kind) {
    case 'snapshotOnly':
      return { sse: [taskEvent(task(taskId, 'WORKING'))] };
    case 'keepAliveOnly':
      return { sse: Array.from({ length: 100 }, () => [':\n', { waitMs: 100 }]).flat(), endAfter: 'hang' };
    case 'refused':
      return { error: { code: -32004, message: 'Unsupported operation' } };
    case 'badData':
      return { sse: [taskEvent(task(taskId, 'WORKING')), 'data: x\n\n'], endAfter: 'hang' };
    case 'foreignEvent':
      return { sse: [ev(frame({ statusUpdate: { taskId: `other-${taskId}`, contextId: 'C9', status: { state: 'TASK_STATE_COMPLETED' } } }))], endAfter: 'hang' };
  }
}

function readAnswer(kind: ReadKind, taskId: string): ScriptedAnswer {
  if (kind === 'internalError') return { error: { code: -32603, message: 'Internal error' } };
  if (kind === 'unknownState') return { result: { ...task(taskId, 'WORKING'), status: { state: 'TASK_STATE_PONDERING' } } };
  return { result: task(taskId, 'WORKING') };
}

/** Largest number of calls in any window of `windowMs` starting at a call at or after `fromMs`. */
function maxCallsPerWindow(calls: readonly ScriptedRequest[], fromMs: number, windowMs: number): number {
  const times = calls.map((call) => call.at).filter((at) => at >= fromMs).sort((a, b) => a - b);
  let max = 0;
  for (let index = 0; index < times.length; index++) max = Math.max(max, times.filter((at) => at >= times[index]! && at < times[index]! + windowMs).length);
  return max;
}

describe('the progress rule (property)', () => {
  it('nothing-new observations: ≤ 2 agent calls per scaled minute after the first, then AMBIGUOUS / NEEDS_ATTENTION with the evidence', async () => {
    const scripts = new Map<string, { streams: StreamKind[]; reads: ReadKind[] }>();
    const pick = <T,>(list: readonly T[], call: number) => list[(call - 1) % list.length]!;
    const counts = new Map<string, number>();
    const nth = (key: string) => {
      counts.set(key, (counts.get(key) ?? 0) + 1);
      return counts.get(key)!;
    };
    let runs = 0;
    const agent = await h.agentWith({
      SendMessage: (params) => ({ result: { task: task(`T-${params.message.messageId}`, 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } }),
      SubscribeToTask: (params) => streamAnswer(pick(scripts.get(params.id)!.streams, nth(`s:${params.id}`)), params.id),
      GetTask: (params) => readAnswer(pick(scripts.get(params.id)!.reads, nth(`g:${params.id}`)), params.id),
    });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, SETTINGS);
    const sequence = <T,>(values: readonly T[]) => fc.array(fc.constantFrom(...values), { minLength: 1, maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(sequence(STREAMS), sequence(READS), async (streams, reads) => {
        const key = `progress-${++runs}`;
        const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: key, idempotencyKey: key });
        const taskId = `T-${messageId}`;
        scripts.set(taskId, { streams, reads });
        const record = await eventually(async () => {
          const current = await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
          return current?.state === 'AMBIGUOUS' && current;
        }, `${key} journaled for a person`, SETTINGS.noProgressWindowMs + 8_000, 100);
        expect(record.error?.code).toMatch(/^(NO_PROGRESS|PROTOCOL_ERROR)$/);
        // Either the no-progress window ran out, or (bounded calls) answers we cannot accept came three cycles in a row.
        expect(record.error?.message).toMatch(/no progress for \d+ ms \(since \d{4}-.*\): \d+ observations|^\d+ reads of task \S+ in a row ended on an answer we cannot accept/);
        if (record.error?.code === 'NO_PROGRESS') expect(record.error.message).toMatch(/no progress for/);
        expect(record.noProgressCount).toBeGreaterThan(0);
        expect(record.noProgressLast).toBeTruthy();
        await eventually(async () => (await producer.get(id)).state === 'NEEDS_ATTENTION', `${key} workflow NEEDS_ATTENTION`, 5_000);
        const calls = agent.requests.filter((request) => request.params?.id === taskId);
        const firstCallAt = Math.min(...calls.map((call) => call.at));
        const slowFrom = firstCallAt + SETTINGS.slowPollAfterMs + SETTINGS.followBackoff.capMs + SETTINGS.streamQuietMs + 500;
        expect(maxCallsPerWindow(calls, slowFrom, SETTINGS.slowPollMs)).toBeLessThanOrEqual(2);
        // Bounded overall: no loop before the slow poll either.
        expect(calls.length).toBeLessThan(40);
      }),
      { numRuns: 4, seed: 20_261_130, endOnFailure: true },
    );
  }, 120_000);
});
