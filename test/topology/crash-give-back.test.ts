/**
 * attack33b, crash point `send.after-give-back`: a worker process whose send run stalled past the guard after its
 * mark (DA2A_STALL_AT, a real event-loop stall of 1.5 s), gave its unsent mark back and was SIGKILLed before it gave
 * its send lease back. The row is unmarked, the dead run's send lease runs on to its TTL (10 s here). A fresh fleet
 * sends the message again; the agent holds that SendMessage 15 s and shows its task only when it answers (V2). Before
 * (markSending-2.lua took the lease only when free): the fresh mark sent "lease elsewhere", unheld; once the dead
 * run's lease ran out the reconciler searched, missed the held request and resent: two SendMessages. Now the
 * claiming mark takes the lease over: one SendMessage, COMPLETED. Real worker process, redis-server, raw JSON-RPC agent.
 */
import { describe, expect, it } from 'vitest';
import { useCrashScene } from '../harness/crash-scene.ts';
import { holdingSendHandlers } from '../harness/holding-agent.ts';
import { startScriptedAgent, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';

interface Holding {
  agent: ScriptedAgentHandle;
}

/** The agent holds each SendMessage up to 15 s (`holdingSendHandlers`). */
async function startHoldingAgent(): Promise<Holding> {
  return { agent: await startScriptedAgent(holdingSendHandlers(15_000)) };
}

const scene = useCrashScene<Holding>({ prefix: 'giveback-', startAgents: startHoldingAgent, stopAgents: ({ agent }) => agent.close() });

describe('crash point send.after-give-back', () => {
  it('killed after giving its unsent mark back, its lease left: the next send takes the lease, one SendMessage while the agent holds it', async () => {
    const { producer } = scene.setUp();
    const { agent } = scene.agents();
    const worker = scene.spawn({ DA2A_STALL_AT: 'send.after-mark:1500', DA2A_CRASH_AT: 'send.after-give-back', DA2A_LOCK_DURATION_MS: '10000' });
    await worker.ready;
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'giveback-1' });
    expect((await worker.exited).signal).toBe('SIGKILL');
    expect(agent.count('SendMessage')).toBe(0);
    const row = await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
    expect(row).toMatchObject({ state: 'INTENT', sendStartedAt: undefined });
    await scene.startFleet({ reconcileIntervalMs: 300 });
    const view = await scene.reached(id, (seen) => seen.state === 'COMPLETED' || seen.state === 'NEEDS_ATTENTION' || seen.state === 'FAILED', 45_000);
    expect(view.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
  }, 90_000);
});
