/**
 * The durable-core crash test against an A2A 0.3 agent (@a2a-js/sdk 0.3.14).
 * 0.3 has no ListTasks, so a crash between send and record cannot be resolved
 * by searching: the record is marked AMBIGUOUS for a person (never resent
 * blindly), unless the agent is configured as deduplicating, in which case the
 * same messageId is resent. Everything else (follow, GetTask) works as on 1.0.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { startV03Agent, type V03AgentHandle } from '../harness/agent-v03.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { eventually, spawnWorkerProcess, startTestFleet, type WorkerProcess } from '../harness/fleet.ts';

const redisServer = useRedisServer({ appendOnly: true });
let agent: V03AgentHandle;
const sends = new Map<string, number>();
let producer: Producer;
let fleet: Fleet | undefined;
const processes: WorkerProcess[] = [];
let counter = 0;

beforeAll(async () => {
  agent = await startV03Agent({
    behaviour: (request) => {
      sends.set(request.messageId, (sends.get(request.messageId) ?? 0) + 1);
      return completesWith('done', { delayMs: 100 })(request);
    },
  });
});
afterAll(async () => {
  await agent.stop();
});
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
  await Promise.all(processes.splice(0).map((worker) => worker.kill()));
  await producer?.close();
});

async function crashAfterSend(idempotencyKey: string) {
  const prefix = `v03-${++counter}`;
  producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_CRASH_AT: 'send.after-request' });
  processes.push(worker);
  await worker.ready;
  const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey });
  expect((await worker.exited).signal).toBe('SIGKILL');
  expect(sends.get(messageId)).toBe(1);
  return { id, messageId, prefix };
}

const finished = (id: string) =>
  eventually(async () => {
    const view = await producer.get(id);
    return view.state !== 'RUNNING' && view;
  }, 'workflow finished', 30_000);

describe('crash between send and record, against a 0.3 agent', () => {
  it('a normal 0.3 delegation completes (send, follow over 0.3 streams)', async () => {
    const prefix = `v03-${++counter}`;
    producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'hello', idempotencyKey: 'plain' });
    const view = await finished(id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]!.agentInterface).toMatchObject({ protocolVersion: '0.3' });
    expect(sends.get(messageId)).toBe(1);
  });

  it('without deduplication the record is AMBIGUOUS and never resent', async () => {
    const { id, messageId, prefix } = await crashAfterSend('v03-ambiguous');
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    const view = await finished(id);
    expect(view.state).toBe('NEEDS_ATTENTION');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'AMBIGUOUS' } });
    expect(view.steps[0]!.attempts[0]!.error!.message).toContain('cannot list tasks');
    expect(sends.get(messageId)).toBe(1);
    // A person decides: run it again (a new attempt with a new messageId).
    await producer.resolve(id, 'retry');
    const retried = await eventually(async () => {
      const current = await producer.get(id);
      return current.state === 'COMPLETED' && current;
    }, 'retried after the decision', 30_000);
    const [first, second] = retried.steps[0]!.attempts;
    expect(first).toMatchObject({ state: 'AMBIGUOUS', messageId });
    expect(second!.state).toBe('COMPLETED');
    expect(second!.messageId).not.toBe(messageId);
    expect(sends.get(second!.messageId)).toBe(1);
    await expect(producer.resolve(id, 'retry')).rejects.toMatchObject({ code: 'WORKFLOW_FINISHED' });
  });

  it('a person may also abandon an AMBIGUOUS delegation: nothing can undo it, so FAILED with the reason (never CANCELED: it may have happened)', async () => {
    const { id, prefix } = await crashAfterSend('v03-abandon');
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    expect((await finished(id)).state).toBe('NEEDS_ATTENTION');
    await producer.resolve(id, 'abandon');
    const view = await eventually(async () => {
      const current = await producer.get(id);
      return current.state !== 'RUNNING' && current.state !== 'NEEDS_ATTENTION' && current;
    }, 'abandoned', 30_000);
    expect(view.state).toBe('FAILED');
    expect(view.failure).toEqual([expect.stringContaining('abandoned by a person (AMBIGUOUS_SEND)')]);
    expect(view.steps[0]!.attempts).toHaveLength(1);
  });

  it('with the agent configured as deduplicating, the same messageId is resent', async () => {
    const { id, messageId, prefix } = await crashAfterSend('v03-dedup');
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, deduplicatingAgents: [agent.cardUrl] });
    const view = await finished(id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ messageId, resendCount: 1 });
    // This agent does not really deduplicate, so it ran twice: exactly what the configuration promised away.
    expect(sends.get(messageId)).toBe(2);
  });
});
