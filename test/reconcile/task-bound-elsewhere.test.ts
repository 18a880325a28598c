/**
 * An agent that names, for our message, a task the journal binds to another delegation (one task id for every
 * message: a buggy or single-task agent). One task cannot be ours and another's: the delegation goes to a person
 * (AMBIGUOUS, naming the holder) at once, its message sent once, the holder's outcome untouched. Before, the write was
 * refused, the reconciler searched, found the same task, was refused again: INTENT for ever, ListTasks and GetTask
 * without end. Over the path (our SendMessage's answer, the reconciler's search after a crash), the holder (a step of
 * the same workflow, another workflow) and the task's state.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { eventually } from '../harness/fleet.ts';
import { markSentNotRecorded, recordOf, useFieldCases } from '../harness/field-cases.ts';
import { task, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** Every SendMessage answers task T1 in `state` (the message kept in its history); reads show T1 with every message. */
async function oneTaskAgent(state: 'COMPLETED' | 'WORKING'): Promise<{ agent: ScriptedAgentHandle; history: unknown[] }> {
  const history: unknown[] = [];
  const t1 = (contextId?: string) => task('T1', state, { contextId, history, artifacts: { a1: 'first booking' } });
  const agent = await h.agentWith({
    SendMessage: (params) => {
      history.push(params.message);
      return { result: { task: t1(params.message.contextId) } };
    },
    GetTask: () => ({ result: t1() }),
    ListTasks: (params) => ({ result: { tasks: [t1(params.contextId)], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
    SubscribeToTask: () => ({ hang: true }),
  });
  return { agent, history };
}

const sendsOf = (agent: ScriptedAgentHandle, text: string) => agent.calls('SendMessage').filter((call) => call.params.message.parts?.[0]?.text === text).length;

describe('a task named for our message that belongs to another delegation', () => {
  it('property: a person decides at once (AMBIGUOUS naming the holder), our message sent once, the holder untouched, the search bounded', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('send', 'reconcile'), fc.constantFrom('same workflow', 'another workflow'), fc.constantFrom('COMPLETED' as const, 'WORKING' as const), async (path, holder, state) => {
        const prefix = h.newPrefix();
        const { agent, history } = await oneTaskAgent(state);
        let p = h.producer(prefix);
        // The holder: delegation `first` binds T1.
        const sameWorkflow = holder === 'same workflow';
        const first = sameWorkflow
          ? await p.startWorkflow({ workflowId: 'trip', steps: [{ name: 'a', agent: agent.cardUrl, message: { text: 'first' } }, { name: 'b', agent: agent.cardUrl, message: { text: 'second' } }] })
          : await p.delegate({ agent: agent.cardUrl, text: 'first', idempotencyKey: 'first' });
        const firstRef = { workflowId: first.id, delegationId: sameWorkflow ? 'a.1' : 'main.1' };
        if (path === 'reconcile' && !sameWorkflow) {
          await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
          await eventually(async () => (await p.journal.getDelegation(firstRef))?.taskId === 'T1', 'T1 bound to the first', 15_000);
          await h.closeFleetsAndProducers();
          p = h.producer(prefix);
          // Crash window 2 for the second: marked sent, never recorded; the agent has its message in T1.
          const second = await p.delegate({ agent: agent.cardUrl, text: 'second', idempotencyKey: 'second' });
          history.push({ messageId: (await recordOf(p, second.id))!.messageId, role: 'ROLE_USER', parts: [{ text: 'second' }] });
          await markSentNotRecorded(p, second.id, agent);
          await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
          await expectPersonDecides(p, { workflowId: second.id, delegationId: 'main.1' }, agent, 0);
        } else {
          await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
          // The second: sent normally (b after a in the same workflow, or a delegation of its own).
          const secondRef = sameWorkflow
            ? { workflowId: first.id, delegationId: 'b.1' }
            : { workflowId: (await (async () => {
                await eventually(async () => (await p.journal.getDelegation(firstRef))?.taskId === 'T1', 'T1 bound to the first', 15_000);
                return (await p.delegate({ agent: agent.cardUrl, text: 'second', idempotencyKey: 'second' })).id;
              })()), delegationId: 'main.1' };
          if (sameWorkflow && state === 'WORKING') {
            // b runs only after a completes; a stays WORKING at T1. Nothing to check for b: a holds alone.
            await eventually(async () => (await p.journal.getDelegation(firstRef))?.state === 'WORKING', 'a working', 15_000);
            expect(sendsOf(agent, 'second')).toBe(0);
            return;
          }
          await expectPersonDecides(p, secondRef, agent, 1);
        }
        // The holder keeps its own outcome.
        const holderRow = await p.journal.getDelegation(firstRef);
        expect(holderRow).toMatchObject({ taskId: 'T1', state });
        expect(sendsOf(agent, 'first')).toBe(1);
        await h.closeFleetsAndProducers();
      }),
      { numRuns: 6 },
    );
  });
});

/** The delegation ends AMBIGUOUS naming T1's holder; `sends` SendMessage of its own at most; the search not repeated without end. */
async function expectPersonDecides(p: ReturnType<typeof h.producer>, ref: { workflowId: string; delegationId: string }, agent: ScriptedAgentHandle, sends: number) {
  const row = await eventually(async () => {
    const current = await p.journal.getDelegation(ref);
    return current?.state === 'AMBIGUOUS' && current;
  }, `${ref.workflowId}/${ref.delegationId} to a person`, 20_000);
  expect(row.error).toMatchObject({ code: 'AMBIGUOUS' });
  expect(row.error!.message).toMatch(/task T1, which belongs to delegation/);
  expect(row.taskId).toBeUndefined();
  expect(sendsOf(agent, 'second')).toBe(sends);
  const lists = agent.count('ListTasks');
  await eventually(async () => (await p.get(ref.workflowId)).state === 'NEEDS_ATTENTION', 'the workflow waits for a person', 10_000);
  expect(agent.count('ListTasks')).toBeLessThanOrEqual(lists + 1);
}
