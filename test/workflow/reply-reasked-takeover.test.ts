/**
 * The reply sender after a lease taken over (reply.ts `replyDelivered`): a worker died holding a reply's 'sending'
 * lease, the next one asks the agent (GetTask) before any resend. The question the reply answers was asked again after
 * our earlier answer, so the journal keyed it `<key>#re<n>` (applyStatus-5.lua), while the agent's status still carries
 * its own key `<key>`. Before `asksQuestion`, `<key>` against `<key>#re<n>` read as "moved on": the reply was taken
 * as delivered and never sent, the workflow waiting for ever. The count that matters is at the agent: SendMessage of
 * the reply's messageId. Real redis-server, a real fleet's context, a scripted agent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DelegationRef, Journal } from '@durable-a2a/shared';
import { sendReply } from '../../packages/workers/src/delegation/runs/reply.ts';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { runningIntent } from '../harness/journal-rows.ts';
import { startScriptedAgent, task } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
const BASE = Date.now() - 60_000;
const stamp = (seconds: number) => new Date(BASE + seconds * 1_000).toISOString();
let counter = 0;

/** What the agent's GetTask shows after the dead worker: its status asks `asks` (a key; undefined: WORKING), its history holds the reply or not. */
interface AgentView {
  asks: string | undefined;
  holdsReply: boolean;
}

async function scene() {
  const view: { current: AgentView; taskId: string; contextId: string; replyId: string } = { current: { asks: 'q', holdsReply: false }, taskId: '', contextId: '', replyId: '' };
  const agent = await startScriptedAgent({
    GetTask: () => {
      const { asks, holdsReply } = view.current;
      const history = holdsReply ? [{ messageId: view.replyId, role: 'ROLE_USER', parts: [{ text: 'the answer' }] }] : [];
      const message = asks === undefined ? undefined : { messageId: asks, role: 'ROLE_AGENT', parts: [{ text: 'which seat?' }] };
      return { result: task(view.taskId, asks === undefined ? 'WORKING' : 'INPUT_REQUIRED', { contextId: view.contextId, history, timestamp: stamp(50), ...(message ? { message } : {}) }) };
    },
    SendMessage: (params) => ({ result: { task: task(view.taskId, 'WORKING', { contextId: view.contextId, history: [params.message], timestamp: stamp(60) }) } }),
  });
  const prefix = `reply-reasked${++counter}`;
  const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['notify'], reconcileIntervalMs: 600_000 });
  keep(fleet, agent);
  const journal = fleet.context.journal;

  /**
   * A delegation whose question `q` was asked `askings` times (each after our delivered answer to the one before, at a
   * later stamp: keyed `q`, `q#re1`, ...), then our reply to the last asking journaled and its send lease taken by a
   * worker that died (a 1 ms lease). Returns the row as the next reply job reads it and the reply's messageId.
   */
  const deadSender = async (askings: number) => {
    const ref = await runningIntent(journal, `wf-${prefix}-${++counter}`, agent.cardUrl);
    Object.assign(view, { taskId: `T-${ref.workflowId}`, contextId: `c-${ref.workflowId}` });
    for (let asking = 0; asking < askings; asking++) {
      await asks(journal, ref, view, asking * 10);
      if (asking < askings - 1) await answered(journal, ref, `r-${ref.workflowId}-${asking}`);
    }
    const row = (await journal.getDelegation(ref))!;
    expect(row.questionKey).toBe(askings === 1 ? 'q' : `q#re${askings - 1}`);
    view.replyId = `r-${ref.workflowId}-${askings - 1}`;
    expect((await journal.recordReply(ref, view.replyId, { parts: [{ text: 'seat 12' }] })).created).toBe(true);
    expect(await journal.markReply(ref, 1, view.replyId, 'sending', '', { token: 'dead-worker', leaseMs: 1 })).toBe(true);
    const held = (await journal.getDelegation(ref))!;
    expect(held).toMatchObject({ replyForQuestion: row.questionKey, replyState: 'sending' });
    await eventually(async () => Date.now() > (held.replySendUntil ?? 0) + 1 || undefined, 'the dead worker\'s lease expired', 5_000);
    return { ref, record: (await journal.getDelegation(ref))!, replyId: view.replyId };
  };
  const sendsOf = (messageId: string) => agent.calls('SendMessage').filter((call) => call.params.message?.messageId === messageId).length;
  return { fleet, view, deadSender, sendsOf };
}

/** The agent asks `q` at `at` seconds (an INPUT_REQUIRED status event on our task). */
async function asks(journal: Journal, ref: DelegationRef, view: { taskId: string; contextId: string }, at: number): Promise<void> {
  await journal.applyStatus(ref, {
    mode: 'event',
    state: 'INPUT_REQUIRED',
    taskId: view.taskId,
    contextId: view.contextId,
    statusTimestamp: stamp(at),
    statusMessage: { messageId: 'q', role: 'ROLE_AGENT', parts: [{ text: 'which seat?' }] },
  });
}

/** Our answer `answerId` to the open question, journaled and delivered. */
async function answered(journal: Journal, ref: DelegationRef, answerId: string): Promise<void> {
  expect((await journal.recordReply(ref, answerId, { parts: [{ text: `answer ${answerId}` }] })).created).toBe(true);
  expect(await journal.markReply(ref, 1, answerId, 'sending', '', { token: `tok-${answerId}`, leaseMs: 60_000 })).toBe(true);
  expect(await journal.markReply(ref, 1, answerId, 'sent', '', { token: `tok-${answerId}` })).toBe(true);
}

describe('a reply taken over from a dead sender, its question asked again', () => {
  it('the case: `q` asked again after our answer (journaled `q#re1`), the agent still asks `q`: the reply is sent, once (before: taken as delivered, never sent)', async () => {
    const { fleet, view, deadSender, sendsOf } = await scene();
    const { record, replyId } = await deadSender(2);
    view.current = { asks: 'q', holdsReply: false };
    expect(await sendReply(fleet.context, record, { id: 'reply-job-1', attemptsMade: 0, attempts: 1 })).toBe('reply-sent');
    expect(sendsOf(replyId)).toBe(1);
  });

  it('property: any number of askings, any view of the agent after the dead sender: the reply is sent exactly when the agent still asks that question and does not hold it', async () => {
    const { fleet, view, deadSender, sendsOf } = await scene();
    const views = fc.record({ asks: fc.constantFrom<string | undefined>('q', 'z', undefined), holdsReply: fc.boolean() });
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), views, async (askings, agentView) => {
        const { record, replyId } = await deadSender(askings);
        view.current = agentView;
        const stillAsked = agentView.asks === 'q' && !agentView.holdsReply;
        const outcome = await sendReply(fleet.context, record, { id: `reply-job-${replyId}-${counter}`, attemptsMade: 0, attempts: 1 });
        seen.add(`${askings > 1}/${stillAsked}`);
        expect(outcome).toBe(stillAsked ? 'reply-sent' : 'reply-already-delivered');
        expect(sendsOf(replyId)).toBe(stillAsked ? 1 : 0);
      }),
      { numRuns: 30, examples: [[2, { asks: 'q', holdsReply: false }], [3, { asks: 'z', holdsReply: false }], [1, { asks: 'q', holdsReply: false }]] },
    );
    expect(seen.size).toBe(4);
  }, 120_000);
});
