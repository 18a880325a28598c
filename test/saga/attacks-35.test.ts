/**
 * Attack round 35: answers that mix what they say about our task with what they say about another, on the channels
 * we opened ourselves (SubscribeToTask, the rest of a streaming send), with A2A 0.3 and 1.0 shapes mixed in one
 * stream; answers of many tiny artifacts (a count, within every byte limit). Real redis-server, real fleet, raw
 * node:http JSON-RPC agents (exact bytes), counting SendMessage. The findings are marked FIXED FINDING (each verified
 * failing on main); the other `it`s hold and stay as regression tests.
 */
import { describe, expect, it } from 'vitest';
import { artifactText, finished, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { holder, listing, personNaming, receivedOf, type Received } from '../harness/holders.ts';
import { AU, SU, agentMessage, ev, task, taskEvent } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const fast = { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 }, requestTimeoutMs: 3_000 };

/** A JSON-RPC stream frame whose result is `value` as it is (any shape: 1.0 wrapper, 0.3 `kind`-tagged object). */
const frame = (value: unknown) => ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: value }));

/** Our message as a 0.3 agent keeps it: `kind` tags, role `user`, a `kind: 'text'` part. */
const ours03 = (received: Received) => ({ kind: 'message', role: 'user', messageId: received.messageId, contextId: received.contextId, parts: [{ kind: 'text', text: 'book it' }] });

/**
 * One delegation to an agent that answers SendMessage (or, with `streamingSends`, SendStreamingMessage) with T1
 * WORKING holding our message, streams `after(received)` after T1's snapshot and ends the stream; GetTask and
 * ListTasks show T1 COMPLETED with a-T1 and `T2` (when it holds our message, as the agent's listing would).
 */
async function streamCarrying(after: (received: Received) => string[], options: { streamingSends?: boolean; t2Holds?: boolean } = {}) {
  let received: Received | undefined;
  const frames = () => [taskEvent(holder('T1', 'WORKING', received!)), ...after(received!)];
  const agent = await h.agentWith({
    SendMessage: (params) => ((received ??= receivedOf(params)), { result: { task: holder('T1', 'WORKING', received) } }),
    SendStreamingMessage: (params) => ((received ??= receivedOf(params)), { sse: frames(), endAfter: 'close' }),
    SubscribeToTask: () => ({ sse: frames(), endAfter: 'close' }),
    GetTask: (params) => (params.id === 'T1' ? { result: holder('T1', 'COMPLETED', received!) } : { result: holder(String(params.id), 'COMPLETED', received!) }),
    ListTasks: () => listing([holder('T1', 'COMPLETED', received!), ...(options.t2Holds === false ? [] : [holder('T2', 'COMPLETED', received!)])]),
  });
  const prefix = h.newPrefix();
  const producer = h.producer(prefix);
  await h.fleetFor(prefix, { ...fast, ...(options.streamingSends ? { streamingSends: true } : {}) });
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book it', idempotencyKey: `${prefix}-1` });
  return { agent, producer, id };
}

/*
 * FIXED FINDING (kind: another task holding our message, shown on our task's own stream). Input: SendMessage answers
 * T1 WORKING holding M1; SubscribeToTask(T1) sends T1's snapshot, then a Task event T2 COMPLETED whose history holds
 * M1 (the agent ran our message a second time), then SU(T1 COMPLETED); GetTask(T1) answers COMPLETED a-T1. Observed on
 * main: `main.1 COMPLETED taskId T1`, calls SendMessage, SubscribeToTask T1, GetTask T1: T2 dropped as a "foreign
 * event" (a protocol error), nobody told, though the same T2 answered by GetTask, CancelTask, the reply or a push ends
 * AMBIGUOUS naming both (`foreignHolder`). Variant (streaming send, 0.3 and 1.0 shapes in one stream): a 0.3
 * `status-update` for T2, `input-required`, whose status message is M1 as a 0.3 `user` message: the same.
 * Expected: AMBIGUOUS for a person naming T1 and T2, one SendMessage, nothing of T2 applied. Fixed: the table's
 * stream-event row (`foreignEventHolder`, packages/workers/src/delegation/core/search-row.ts). Property:
 * packages/workers/test/stream-foreign-holder-property.test.ts.
 */
describe('attack 35: another task holding our message on our own stream', () => {
  it('SubscribeToTask(T1): a Task event T2 COMPLETED holding our message, then T1 COMPLETED: AMBIGUOUS naming T1 and T2, one SendMessage', async () => {
    const { agent, producer, id } = await streamCarrying((received) => [taskEvent(holder('T2', 'COMPLETED', received)), ev(SU('COMPLETED', { taskId: 'T1', contextId: received.contextId }))]);
    const row = await personNaming(producer, id, ['T1', 'T2'], 40_000);
    expect(row.taskId).toBe('T1');
    expect(artifactText(await viewOf(producer, id), 'a-T2')).toBeUndefined();
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('streaming send, shapes mixed: a 0.3 status-update for T2 (input-required) whose status message is our message as a 0.3 user message, inside 1.0 frames: AMBIGUOUS naming T1 and T2, one send', async () => {
    const { agent, producer, id } = await streamCarrying(
      (received) => [
        frame({ kind: 'status-update', taskId: 'T2', contextId: received.contextId, final: false, status: { state: 'input-required', message: ours03(received) } }),
        ev(AU('a-T1', false, true, "T1's booking", { contextId: received.contextId })),
        ev(SU('COMPLETED', { taskId: 'T1', contextId: received.contextId })),
      ],
      { streamingSends: true },
    );
    await personNaming(producer, id, ['T1', 'T2'], 40_000);
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
  }, 60_000);

  for (const [name, other] of [
    ['another client\'s message', (received: Received) => task('T2', 'COMPLETED', { contextId: received.contextId, history: [{ messageId: 'M-someone-else', role: 'ROLE_USER', parts: [{ text: 'hi' }] }] })],
    ['an agent\'s echo of our messageId (ROLE_AGENT)', (received: Received) => task('T2', 'COMPLETED', { contextId: received.contextId, history: [agentMessage('echo', { messageId: received.messageId })] })],
  ] as const) {
    it(`control: a Task event T2 holding ${name} on T1's stream is a protocol error, never a person: COMPLETED a-T1, one SendMessage`, async () => {
      const { agent, producer, id } = await streamCarrying((received) => [taskEvent(other(received)), ev(SU('COMPLETED', { taskId: 'T1', contextId: received.contextId }))], { t2Holds: false });
      expect(await finished(producer, id, 40_000)).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
      expect(artifactText(await viewOf(producer, id), 'a-T1')).toBe("T1's booking");
      expect(agent.count('SendMessage')).toBe(1);
    }, 60_000);
  }
});

describe('attack 35: attacks that hold', () => {
  it('INPUT_REQUIRED then, before any answer, the artifact and COMPLETED on the same stream: COMPLETED with it, one SendMessage, no reply sent', async () => {
    let received: Received | undefined;
    const agent = await h.agentWith({
      SendMessage: (params) => ((received ??= receivedOf(params)), { result: { task: holder('T1', 'WORKING', received) } }),
      SubscribeToTask: () => ({
        sse: [
          taskEvent(holder('T1', 'WORKING', received!)),
          ev(SU('INPUT_REQUIRED', { taskId: 'T1', contextId: received!.contextId, message: agentMessage('which date?', { messageId: 'q1', taskId: 'T1' }) })),
          ev(AU('a1', false, true, 'booked anyway', { contextId: received!.contextId })),
          ev(SU('COMPLETED', { taskId: 'T1', contextId: received!.contextId })),
        ],
        endAfter: 'close',
      }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: received!.contextId, artifacts: { a1: 'booked anyway' } }) }),
    });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, fast);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `${prefix}-1` });
    expect(await finished(producer, id, 40_000)).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked anyway');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);
});

/*
 * FIXED FINDING (kind: what one answer makes Redis do is bounded by count, not only by bytes). Input: a Task listing
 * 30,000 empty artifacts (`{"artifactId":"a<n>","parts":[]}`: a 1 MB SSE event, within `sseEventBytes`; 15.4 MB as
 * the journal counts it, within `artifactBytesPerDelegation`) as SubscribeToTask's snapshot, then COMPLETED; GetTask
 * shows the same. Observed on main: `hotel.1 COMPLETED` with 30,000 artifacts, each snapshot one applyStatus-5.lua
 * over all of them: Redis SLOWLOG 0.7 to 1.4 s per snapshot at load 8 (a 1-artifact snapshot over 30,000 held: 0.9 s),
 * every other delegation's command waiting behind it; an agent that repeats the snapshot holds Redis for the fleet (this
 * case took 52 s to settle on main at load 14, 0.9 s with the fix).
 * Variant: 101 artifact updates, each a new id, under `artifactsPerDelegation: 100` (the option did not exist: all kept).
 * Expected: a count limit as the bytes have (`artifactsPerDelegation`, default 1,000): over it nothing stored, AMBIGUOUS
 * LIMIT_EXCEEDED naming it (a person: the agent produced output, never re-delegated), one SendMessage. Fixed: the
 * journal (`withinArtifactLimit` in packages/shared/src/journal/status.ts, applyArtifact-2.lua ARGV[11]). Property:
 * test/journal/artifact-count-property.test.ts.
 */
describe('attack 35: many tiny artifacts', () => {
  /** One step over agent A (`handlers` after SendMessage) and B; A's attempt must end a person, B never sent to. */
  async function overTheCount(frames: (received: Received) => string[], fleetOptions: Record<string, unknown> = {}) {
    let received: Received | undefined;
    const a = await h.agentWith({
      SendMessage: (params) => ((received ??= receivedOf(params)), { result: { task: holder('T1', 'WORKING', received) } }),
      SubscribeToTask: () => ({ sse: frames(received!), endAfter: 'close' }),
      GetTask: () => ({ result: holder('T1', 'WORKING', received!) }),
    });
    const { b, producer, view, id } = await h.stepOverTwo(a.cardUrl, { ...fast, ...fleetOptions }, 50_000);
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'artifactsPerDelegation' } });
    expect(b.count('SendMessage')).toBe(0);
    expect(a.count('SendMessage')).toBe(1);
    return { producer, id };
  }

  it('a snapshot listing 30,000 empty artifacts (1 MB, within every byte limit): AMBIGUOUS LIMIT_EXCEEDED artifactsPerDelegation, none stored, never re-delegated', async () => {
    const artifacts = Array.from({ length: 30_000 }, (_, index) => ({ artifactId: `a${index}`, parts: [] }));
    const { producer, id } = await overTheCount((received) => [taskEvent(task('T1', 'WORKING', { contextId: received.contextId, artifacts })), ev(SU('COMPLETED', { taskId: 'T1', contextId: received.contextId }))]);
    const attempt = await producer.journal.getDelegationView({ workflowId: id, delegationId: 'hotel.1' });
    expect(attempt!.artifacts).toHaveLength(0);
  }, 60_000);

  it('101 artifact updates, each a new id, under artifactsPerDelegation 100: AMBIGUOUS LIMIT_EXCEEDED at the 101st, 100 kept, never re-delegated', async () => {
    const { producer, id } = await overTheCount(
      (received) => [
        taskEvent(holder('T1', 'WORKING', received)),
        ...Array.from({ length: 101 }, (_, index) => ev(AU(`x${index}`, false, true, '', { contextId: received.contextId }))),
        ev(SU('COMPLETED', { taskId: 'T1', contextId: received.contextId })),
      ],
      { limits: { artifactsPerDelegation: 100 } },
    );
    const attempt = await producer.journal.getDelegationView({ workflowId: id, delegationId: 'hotel.1' });
    expect(attempt!.artifacts).toHaveLength(100);
  }, 60_000);
});
