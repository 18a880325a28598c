/**
 * A CancelTask the agent accepts while its task still waits for an answer (an agent that cancels asynchronously):
 * the attempt goes to a person (CANCEL_REFUSED) only after three reconcile rounds that found it still waiting, never
 * after three CancelTask answers that came close together (several cancel requests of a person, a late cancel, a
 * stop): those are one round. Before, every answer counted: a person pressing cancel three times sent a task the
 * agent was canceling to a person (NEEDS_ATTENTION CANCEL_LOST_RACE, only `abandon`, FAILED) instead of CANCELED.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { eventually } from '../harness/fleet.ts';
import { useFieldCases } from '../harness/field-cases.ts';
import { agentMessage, task, taskEvent, type ScriptedHandlers } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** T1 asks "how many?"; CancelTask is accepted and answered with the task as it is; it shows CANCELED once `done.value`. */
const slowToCancel = (done: { value: boolean }) => (seen: { contextId?: string }): ScriptedHandlers => {
  const current = () =>
    done.value
      ? task('T1', 'CANCELED', { contextId: seen.contextId, timestamp: h.at(2) })
      : task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), message: agentMessage('how many?', { taskId: 'T1', contextId: seen.contextId }) });
  return {
    SendMessage: (params) => {
      seen.contextId ??= params.message.contextId;
      return { result: { task: { ...current(), history: [params.message] } } };
    },
    GetTask: () => ({ result: current() }),
    SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' }),
    CancelTask: () => ({ result: current() }),
  };
};

describe('a cancel requested several times of an agent that cancels its waiting task asynchronously', () => {
  it('property: over 2..4 cancel requests in a row, the workflow ends CANCELED once the agent canceled, never sent to a person', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 4 }), async (requests) => {
        const done = { value: false };
        const { producer: p, agent, prefix } = await h.setUp(slowToCancel(done), { reconcileIntervalMs: 4_000 });
        const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `slow-cancel-${++n}` });
        await eventually(async () => (await p.questions(id)).length > 0, 'the question', 15_000);
        for (let request = 0; request < requests; request += 1) await p.cancel(id);
        const fleet = await h.fleetFor(prefix);
        await eventually(async () => agent.count('CancelTask') >= requests, 'every request\'s CancelTask answered', 15_000);
        await eventually(async () => {
          const counts = await fleet.context.queues.send.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
          return Object.values(counts).every((count) => count === 0) && agent.openRequests() === 0;
        }, 'the cancel jobs done', 15_000);
        // The agent's cancel completes now: the next reconcile round finds the task CANCELED.
        done.value = true;
        const view = await eventually(async () => {
          const current = await p.get(id);
          return ['CANCELED', 'FAILED', 'NEEDS_ATTENTION', 'COMPLETED'].includes(current.state) && current;
        }, 'the workflow ends', 30_000);
        expect(view.state).toBe('CANCELED');
        expect(view.steps[0]!.attempts[0]!.state).toBe('CANCELED');
        await h.closeFleetsAndProducers();
      }),
      { numRuns: 3 },
    );
  });
});
