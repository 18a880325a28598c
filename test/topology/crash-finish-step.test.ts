/**
 * The one-step finish (finishStep-5.lua: a one-step workflow's terminal status and its settle in one script) with
 * real worker processes, SIGKILLed right before and right after that one call. Before: nothing of the terminal status
 * or the settle is written, so a fresh worker's reconciler records the outcome and settles it (crash window 4).
 * After: the workflow is finished, compacted and out of the index; nothing is left to do (crash window 6 is inside
 * the script). Either way one SendMessage, one finished workflow, an empty index.
 */
import { describe, expect, it } from 'vitest';
import { startDemoAgent } from '../harness/agent.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { useCrashScene } from '../harness/crash-scene.ts';
import { eventually } from '../harness/fleet.ts';

const scene = useCrashScene({
  prefix: 'finish-step',
  startAgents: () => startDemoAgent({ behaviour: completesWith('done', { delayMs: 300 }) }),
  stopAgents: (agent) => agent.close(),
});

/** Delegates with a worker that SIGKILLs itself at `crashAt`; resolves once it did. */
async function killedAt(crashAt: string, key: string) {
  const { producer } = scene.setUp();
  const agent = scene.agents();
  const worker = scene.spawn({ DA2A_CRASH_AT: crashAt });
  await worker.ready;
  const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: key });
  expect((await worker.exited).signal).toBe('SIGKILL');
  return { producer, agent, id, messageId, ref: { workflowId: id, delegationId: 'main.1' } };
}

describe('the one-step finish, killed around its one call', () => {
  it('killed before the call: nothing written; a fresh worker records the outcome and settles it once', async () => {
    const { producer, agent, id, messageId, ref } = await killedAt('follow.before-finish-step', 'before-finish');
    const orphan = (await producer.journal.getDelegation(ref))!;
    expect(orphan.state).not.toBe('COMPLETED');
    expect((await producer.journal.getWorkflow(id))!.state).toBe('RUNNING');
    expect(await producer.journal.isCompacted(id)).toBe(false);
    expect(await producer.journal.unfinishedCount()).toBeGreaterThan(0);

    const fleet = await scene.startFleet();
    const view = await scene.reached(id);
    expect(view.state).toBe('COMPLETED');
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect(await producer.journal.isCompacted(id)).toBe(true);
    expect(await producer.journal.unfinishedCount()).toBe(0);
    // The recovered settle observed the delegation's duration and counted the workflow, once.
    const durations = (await fleet.metrics.delegationDuration.get()).values.filter((value) => value.metricName?.endsWith('_count'));
    expect(durations.reduce((sum, value) => sum + value.value, 0)).toBe(1);
    expect((await fleet.metrics.workflowsFinished.get()).values.reduce((sum, value) => sum + value.value, 0)).toBe(1);
  });

  it('killed right after the call: finished, compacted and out of the index; a fresh worker has nothing to do', async () => {
    const { producer, agent, id, messageId, ref } = await killedAt('follow.after-finish-step', 'after-finish');
    // Everything the two calls would have written is there, before any other worker ran.
    expect(await producer.journal.isCompacted(id)).toBe(true);
    expect((await producer.journal.getWorkflow(id))!.state).toBe('COMPLETED');
    const record = (await producer.journal.getDelegation(ref))!;
    expect(record.state).toBe('COMPLETED');
    expect(record.finishedAt).toBeGreaterThan(0);
    expect(await producer.journal.followLeaseRemainingMs(ref)).toBe(0);
    const view = await producer.get(id);
    expect(view.steps[0]!.attempts[0]!.artifacts.map((artifact) => artifact.artifactId)).toEqual(['result']);

    const fleet = await scene.startFleet();
    expect((await scene.reached(id)).state).toBe('COMPLETED');
    expect(agent.sendMessageCount(messageId)).toBe(1);
    // The script dropped both entries; a reconcile of the killed worker that read the row before may have put the
    // delegation's back (a ZADD after its read, as on the two calls' path): the fresh worker drops it.
    await eventually(async () => (await producer.journal.unfinishedCount()) === 0, 'index drained');
    expect((await fleet.metrics.workflowsFinished.get()).values.reduce((sum, value) => sum + value.value, 0)).toBe(0);
  });
});
