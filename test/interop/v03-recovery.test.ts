/**
 * The durable-core crash test against an A2A 0.3 agent (@a2a-js/sdk 0.3.14).
 * 0.3 has no ListTasks, so a crash between send and record cannot be resolved
 * by searching: the record is marked AMBIGUOUS for a person (never resent
 * blindly), unless the agent is configured as deduplicating, in which case the
 * same messageId is resent. Everything else (follow, GetTask) works as on 1.0.
 */
import { describe, expect, it } from 'vitest';
import type { WorkflowView } from '@durable-a2a/producer';
import { startV03Agent } from '../harness/agent-v03.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { useCrashScene } from '../harness/crash-scene.ts';

const sends = new Map<string, number>();
const scene = useCrashScene({
  prefix: 'v03-',
  startAgents: () =>
    startV03Agent({
      behaviour: (request) => {
        sends.set(request.messageId, (sends.get(request.messageId) ?? 0) + 1);
        return completesWith('done', { delayMs: 100 })(request);
      },
    }),
  stopAgents: (agent) => agent.stop(),
});

async function crashAfterSend(idempotencyKey: string) {
  const { producer } = scene.setUp();
  const worker = scene.spawn({ DA2A_CRASH_AT: 'send.after-request' });
  await worker.ready;
  const { id, messageId } = await producer.delegate({ agent: scene.agents().cardUrl, text: 'book', idempotencyKey });
  expect((await worker.exited).signal).toBe('SIGKILL');
  expect(sends.get(messageId)).toBe(1);
  return { id, messageId, producer };
}

const finished = (id: string) => scene.reached(id, (view: WorkflowView) => view.state !== 'RUNNING');

describe('crash between send and record, against a 0.3 agent', () => {
  it('a normal 0.3 delegation completes (send, follow over 0.3 streams)', async () => {
    const { producer } = scene.setUp();
    await scene.startFleet();
    const { id, messageId } = await producer.delegate({ agent: scene.agents().cardUrl, text: 'hello', idempotencyKey: 'plain' });
    const view = await finished(id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]!.agentInterface).toMatchObject({ protocolVersion: '0.3' });
    expect(sends.get(messageId)).toBe(1);
  });

  it('without deduplication the record is AMBIGUOUS and never resent', async () => {
    const { id, messageId, producer } = await crashAfterSend('v03-ambiguous');
    await scene.startFleet();
    const view = await finished(id);
    expect(view.state).toBe('NEEDS_ATTENTION');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'AMBIGUOUS' } });
    expect(view.steps[0]!.attempts[0]!.error!.message).toContain('cannot list tasks');
    expect(sends.get(messageId)).toBe(1);
    // A person decides: run it again (a new attempt with a new messageId).
    await producer.resolve(id, 'retry');
    const retried = await scene.reached(id);
    const [first, second] = retried.steps[0]!.attempts;
    expect(first).toMatchObject({ state: 'AMBIGUOUS', messageId });
    expect(second!.state).toBe('COMPLETED');
    expect(second!.messageId).not.toBe(messageId);
    expect(sends.get(second!.messageId)).toBe(1);
    await expect(producer.resolve(id, 'retry')).rejects.toMatchObject({ code: 'WORKFLOW_FINISHED' });
  });

  it('a person may also abandon an AMBIGUOUS delegation: nothing can undo it, so FAILED with the reason (never CANCELED: it may have happened)', async () => {
    const { id, producer } = await crashAfterSend('v03-abandon');
    await scene.startFleet();
    expect((await finished(id)).state).toBe('NEEDS_ATTENTION');
    await producer.resolve(id, 'abandon');
    const view = await scene.reached(id, (current) => current.state !== 'RUNNING' && current.state !== 'NEEDS_ATTENTION');
    expect(view.state).toBe('FAILED');
    expect(view.failure).toEqual([expect.stringContaining('abandoned by a person (AMBIGUOUS_SEND)')]);
    expect(view.steps[0]!.attempts).toHaveLength(1);
  });

  it('with the agent configured as deduplicating, the same messageId is resent', async () => {
    const { id, messageId } = await crashAfterSend('v03-dedup');
    await scene.startFleet({ deduplicatingAgents: [scene.agents().cardUrl] });
    const view = await finished(id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ messageId, resendCount: 1 });
    // This agent does not really deduplicate, so it ran twice: exactly what the configuration promised away.
    expect(sends.get(messageId)).toBe(2);
  });
});
