/**
 * Crash window 8's stall guard with journal durability on (WAIT): the guard must count from the mark's
 * `sendStartedAt` (where the reconciler's `sendSettleMs` starts), not from before the WAIT that
 * `markSending` runs before the mark. A replica that acknowledges slowly but within the WAIT timeout is
 * not a stalled worker: the send goes out at once, not a reconciler's resend `sendSettleMs` later.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { useSentinelSet } from '../harness/sentinel.ts';

const sentinelSet = useSentinelSet();
let agent: DemoAgentHandle;
let producer: Producer | undefined;
let fleet: Fleet | undefined;
let primary: Redis | undefined;

beforeAll(async () => {
  agent = await startDemoAgent({ behaviour: completesWith('done') });
});
afterAll(async () => {
  await agent.close();
});
afterEach(async () => {
  await sentinelSet().holdReplication(false);
  await fleet?.close();
  await producer?.close();
  await primary?.quit();
  fleet = producer = primary = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('stall guard with journal durability', () => {
  it('a WAIT before the mark that succeeds after 1.5 s does not count as a stall: one send, no resend', async () => {
    const prefix = 'guard-wait';
    // The producer writes without WAIT; the workers wait for one replica (a timeout the test stays far below).
    producer = createProducer({ redis: sentinelSet().url, addressPolicy: { allowLoopback: true }, prefix });
    fleet = await startTestFleet({ redisUrl: sentinelSet().url, prefix, durability: { replicas: 1, timeoutMs: 15_000 } });
    primary = new Redis({ host: '127.0.0.1', port: await sentinelSet().primaryPort(), lazyConnect: true });
    await primary.connect();

    await sentinelSet().holdReplication(true);
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'slow-replica' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    // The send job waits in the WAIT before its mark (a client blocked on WAIT, nothing marked yet).
    await eventually(async () => /cmd=wait\b/.test(String(await primary!.client('LIST'))), 'the send blocked in WAIT before the mark');
    await sleep(1_500);
    expect((await producer.journal.getDelegation(ref))?.sendStartedAt).toBeUndefined();
    await sentinelSet().holdReplication(false);

    await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', 'completed', 30_000);
    const attempt = (await producer.get(id)).steps[0]!.attempts[0]!;
    // Old guard (counted from before the WAIT): the mark was followed by no request, the reconciler
    // searched sendSettleMs later and resent (resendCount 1).
    expect(attempt.resendCount).toBe(0);
    expect(agent.sendMessageCount(messageId)).toBe(1);
  });
});
