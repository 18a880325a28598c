/**
 * Attacks around a graceful close during a held send (`io/send-errors.ts` `releaseUnlessUnanswered`: the send lease
 * of a request the close stopped is left to its TTL while the row is INTENT). Here Redis misbehaves during the close:
 * it drops every client connection (CLIENT KILL) or stops answering for a while (CLIENT PAUSE ALL) just as the sender
 * closes. The lease must still be left (a failed read of the row leaves it, it never releases blind), a peer adopts
 * the task when the agent shows it, and the agent gets one SendMessage for the messageId.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startGatedAgent } from '../harness/gated-agent.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer, { ignoreErrors: true });
let counter = 0;

type Disturbance = 'drop' | 'pause' | 'none';

async function closeDuring(disturbance: Disturbance, streaming: boolean): Promise<void> {
  const prefix = `closed-sender-redis${++counter}`;
  const agent = await startGatedAgent({});
  const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  const timings = { lockDurationMs: 30_000, requestTimeoutMs: 3_000, livenessTtlMs: 3_000 };
  let sender: Fleet | undefined;
  let peer: Fleet | undefined;
  try {
    sender = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'sender', queues: ['send'], ...(streaming ? { streamingSends: true } : {}), ...timings });
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'closed' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    const method = streaming ? 'SendStreamingMessage' : 'SendMessage';
    await eventually(async () => agent.count(method) === 1, 'the send reached the agent');
    if (!streaming) await eventually(async () => sender!.context.heldSends.heldBy(agent.cardUrl) === 1, 'the held send moved out of its job', 30_000);
    peer = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'peer', ...timings });
    if (disturbance === 'drop') await redis().client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    if (disturbance === 'pause') await redis().client('PAUSE', 2_000, 'ALL');
    await sender.close();
    sender = undefined;
    await eventually(async () => (await producer.journal.leaseHolder(ref)) !== undefined || (await producer.journal.getDelegation(ref))?.taskId !== undefined, 'the journal answers again', 30_000);
    const holderAfterClose = await producer.journal.leaseHolder(ref);
    agent.createTasks();
    agent.releaseAnswers();
    await eventually(async () => (agent.completeTasks(), (await producer.get(id)).state === 'COMPLETED'), 'taken over and completed', 120_000);
    const sends = [...agent.calls('SendMessage'), ...agent.calls('SendStreamingMessage')].filter((call) => call.params?.message?.messageId === messageId);
    expect(sends.length).toBe(1);
    expect(agent.created()).toBe(1);
    expect(holderAfterClose).toMatch(/^sender\/send\//);
  } finally {
    await sender?.close();
    await peer?.close();
    await producer.close();
    await agent.close();
  }
}

describe('a sender closed while Redis drops or stalls, its send held by the agent', () => {
  it('every client connection dropped as the held SendMessage\'s sender closes: the lease left, the task adopted, one SendMessage', async () => {
    await closeDuring('drop', false);
  }, 180_000);

  it('Redis paused (2 s, every command) as the streaming sender closes: the lease left, the task adopted, one send', async () => {
    await closeDuring('pause', true);
  }, 180_000);

  it('property: drop, pause or nothing, held SendMessage or streaming send: one send, one task, COMPLETED', async () => {
    await fc.assert(fc.asyncProperty(fc.constantFrom<Disturbance>('drop', 'pause', 'none'), fc.boolean(), closeDuring), {
      numRuns: Number(process.env.CLOSE_ATTACK_RUNS ?? 3),
      seed: Number(process.env.CLOSE_ATTACK_SEED ?? 31),
      endOnFailure: true,
    });
  }, 600_000);
});
