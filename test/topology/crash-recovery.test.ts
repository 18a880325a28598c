/**
 * Crash windows of the durable core with real worker processes: SIGKILL at a
 * named crash point, then a fresh worker recovers from the journal alone.
 * Architecture crash windows 1, 2, 3 and 8.
 */
import { describe, expect, it } from 'vitest';
import { startDemoAgent } from '../harness/agent.ts';
import { completesWith, runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually } from '../harness/fleet.ts';
import { sendCrashWindowCases, useCrashScene } from '../harness/crash-scene.ts';

const scene = useCrashScene({
  prefix: 'crash',
  startAgents: () => startDemoAgent({ behaviour: completesWith('done', { delayMs: 300 }) }),
  stopAgents: (agent) => agent.close(),
});
const completed = (id: string) => scene.reached(id);

describe('crash recovery', () => {
  sendCrashWindowCases(scene, { keyPrefix: 'window' });

  it('the whole fleet is SIGKILLed with 100 delegations in flight: all complete, none sent twice', async () => {
    const { producer } = scene.setUp();
    const agent = scene.agents();
    agent.setBehaviour(runsSlowly(1_500));
    try {
      const first = scene.spawn();
      await first.ready;
      const started = await Promise.all(
        Array.from({ length: 100 }, (_, index) => producer.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `fleet-${index}` })),
      );
      await eventually(async () => {
        const counts = started.map(({ messageId }) => agent.sendMessageCount(messageId));
        return counts.filter((count) => count > 0).length >= 60;
      }, 'most delegations sent');
      await first.kill('SIGKILL');
      const second = scene.spawn();
      await second.ready;
      for (const { id } of started) await completed(id);
      const counts = started.map(({ messageId }) => agent.sendMessageCount(messageId));
      expect(counts.every((count) => count === 1)).toBe(true);
      await eventually(async () => (await producer.journal.unfinishedCount()) === 0, 'index drained');
    } finally {
      agent.setBehaviour(completesWith('done', { delayMs: 300 }));
    }
  });

  it('a worker stalled between the mark and the request every time sends nothing, gives its mark and send lease back (after its bounded tries), and a fresh worker sends once', async () => {
    const { producer } = scene.setUp();
    const agent = scene.agents();
    // The mark takes the send lease (20 s here); the stall (2.5 s) passes the 1 s margin of crash window 8.
    const stalled = scene.spawn({ DA2A_STALL_AT: 'send.after-mark:2500', DA2A_QUEUES: 'send', DA2A_LOCK_DURATION_MS: '20000' });
    await stalled.ready;
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'stalled-after-mark' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => (await producer.journal.getDelegation(ref))?.sendStartedAt !== undefined, 'marked');
    expect(await producer.journal.followLeaseRemainingMs(ref)).toBeGreaterThan(10_000);
    // Three tries of 2.5 s each, then given back: well before the 20 s lease would end on its own.
    await eventually(async () => (await producer.journal.followLeaseRemainingMs(ref)) === 0, 'send lease given back', 15_000);
    expect(agent.sendMessageCount(messageId)).toBe(0);
    await stalled.kill('SIGKILL'); // it would stall at every send of this delegation again
    await scene.startFleet({ workerId: 'taker' });
    await completed(id);
    expect(agent.sendMessageCount(messageId)).toBe(1);
  });

  it('a worker stalled past its job lock: the second takes over, the late writes of the first are refused, one SendMessage', async () => {
    const { producer } = scene.setUp();
    const agent = scene.agents();
    const stalled = scene.spawn({ DA2A_STALL_AT: 'send.before-mark:6000', DA2A_QUEUES: 'send' });
    await stalled.ready;
    const cardReadsBefore = agent.httpRequests.filter((request) => request.url.includes('agent-card')).length;
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'stalled' });
    // The stalled worker read the Agent Card (its fresh process has no cache) and stops right before its mark and claim.
    await eventually(async () => agent.httpRequests.filter((request) => request.url.includes('agent-card')).length > cardReadsBefore, 'the stalled worker read the card');
    await scene.startFleet({ workerId: 'taker' });
    await completed(id);
    // Let the stalled worker wake up and try its stale write.
    await new Promise((resolve) => setTimeout(resolve, 6_500));
    const record = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!;
    expect(record.state).toBe('COMPLETED');
    expect(record.sendCount).toBe(1);
    expect(record.fence).toBeGreaterThanOrEqual(1);
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect(stalled.child.exitCode).toBeNull();
  });
});
