import { describe, expect, it } from 'vitest';
import { eventually } from '../harness/fleet.ts';
import { recordOf, useFieldCases } from '../harness/field-cases.ts';
import { SU, agentMessage, ev, task, taskEvent } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/**
 * attack33b: a stream asks a question after a snapshot stamped 60 s ahead (one replica's fast clock); one GetTask from a
 * replica further ahead (+120 s) shows the WORKING from before the question. On dd64cae7 it was applied, the question
 * closed and every later read showing it again was refused as stale: WORKING with no question while the agent waited
 * (NO_PROGRESS later). Once a stream has shown the agent's clocks disagree, an unordered observation never takes the row
 * off a question our answer has not reached (streamorder31).
 */
describe('a question kept under skewed replicas', () => {
  it('a parked question, a GetTask from a replica further ahead showing the WORKING before it', async () => {
    const question = (contextId?: string) => agentMessage('one room or two?', { messageId: 'q1', taskId: 'T1', contextId });
    const { producer: p, agent } = await h.setUp((seen) => ({
      SubscribeToTask: (_params, call) =>
        call.count === 1
          ? { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(60) })), ev(SU('INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), message: question(seen.contextId) }))], endAfter: 'close' }
          : { sse: [taskEvent(task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), message: question(seen.contextId) }))], endAfter: 'hang' },
      GetTask: (_params, call) => ({ result: call.count === 1 ? task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(120) }) : task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), message: question(seen.contextId) }) }),
    }));
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'rooms', idempotencyKey: `${h.counter()}-scratch` });
    await eventually(async () => (await recordOf(p, id))?.state === 'INPUT_REQUIRED', 'the question journaled', 15_000);
    await eventually(async () => agent.count('GetTask') >= 3, 'reads', 30_000);
    const row = await recordOf(p, id);
    expect(row?.state).toBe('INPUT_REQUIRED');
    const questions = await p.questions(id);
    expect(questions).toHaveLength(1);
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);
});
