/**
 * A false death (docs/recovery.md "Trade-offs"): a worker process whose event loop is blocked longer than its
 * liveness TTL is presumed dead while it holds follow leases and a send whose answer it has not applied yet. A peer
 * takes every lease over and adopts the send by its messageId; when the stalled process wakes up it joins the roster
 * again at its next beat, its follows' writes are refused by the fences the peer took (or it claims a task again with
 * a new fence, and the peer's are), nothing is sent twice and nothing is left unfinished.
 */
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { journalKeys } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { TEST_TIMINGS, eventually, reconcileOutcomes, startTestFleet } from '../harness/fleet.ts';
import { spawnObserved, type ObservedProcess } from '../harness/processes.ts';
import { useHeldTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

describe('a worker stalled longer than its liveness TTL', () => {
  const held = useHeldTasks();
  let producer: Producer | undefined;
  let survivor: Fleet | undefined;
  let victim: ObservedProcess | undefined;

  afterEach(async () => {
    held.release();
    await survivor?.close();
    await victim?.kill();
    await producer?.close();
  });

  it('holding 5 streams and an unapplied send answer: the peer takes all over, nothing sent twice, all finish once, it rejoins', async () => {
    const prefix = 'stall-takeover';
    const agent = held.agent();
    held.hold();
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    // Leases that last 10 minutes: within this test only the missing liveness key can end them.
    const timings = { lockDurationMs: 600_000, livenessTtlMs: 3_000 };
    victim = spawnObserved('workers', {
      ...{ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_ALLOW_LOOPBACK: 'true', LOG_LEVEL: 'info' },
      ...{ DA2A_REQUEST_TIMEOUT_MS: String(TEST_TIMINGS.requestTimeoutMs), DA2A_RECONCILE_INTERVAL_MS: String(TEST_TIMINGS.reconcileIntervalMs) },
      ...{ DA2A_LOCK_DURATION_MS: String(timings.lockDurationMs), DA2A_LIVENESS_TTL_MS: String(timings.livenessTtlMs) },
      // The event loop blocks for 8 s once the agent answered the `stall` step's SendMessage, before the answer is applied.
      DA2A_STALL_AT: 'send.after-request@stall:8000',
    });
    await victim.ready;
    const victimId = `${hostname()}-${victim.child.pid}`;
    const keys = journalKeys(prefix);
    const followed = await Promise.all(Array.from({ length: 5 }, (_, index) => producer!.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `followed-${index}` })));
    const refs = followed.map(({ id }) => ({ workflowId: id, delegationId: 'main.1' }));
    const owners = async () => Promise.all(refs.map(async (ref) => (await redis().get(keys.followLease(ref.workflowId, ref.delegationId))) ?? ''));
    await eventually(async () => (await owners()).every((owner) => owner.startsWith(`${victimId}/`)), 'the 5 streams followed by the victim', 60_000);

    // The peer runs no sends: the stalled send stays the victim's until the peer takes it over.
    survivor = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'survivor', ...timings, queues: ['reconcile', 'follow', 'verify', 'compensate', 'notify'] });
    const stalled = await producer.startWorkflow({ workflowId: 'stalled', steps: [{ name: 'stall', agent: agent.cardUrl, message: { text: 'stall here' } }] });
    const stalledRef = { workflowId: stalled.id, delegationId: 'stall.1' };

    await eventually(async () => (await owners()).every((owner) => owner.startsWith('survivor/')), 'the 5 streams taken over by the survivor', 60_000);
    expect((await survivor.metrics.deadWorkers.get()).values[0]!.value).toBe(1);
    // The stalled send is taken over while the victim is still blocked (8 s): adopted by its messageId, not sent again.
    const adoptions = async () => {
      const outcomes = await reconcileOutcomes(survivor!);
      return (outcomes['adopted-early'] ?? 0) + (outcomes.adopted ?? 0);
    };
    await eventually(async () => (await adoptions()) === 1, 'the stalled send adopted by the survivor');
    // The victim wakes up: its next beat finds its key lapsed and lists it again.
    await eventually(async () => victim!.stdoutLines().some((line) => line.includes('liveness key ran out')), 'the victim woke up and beat', 60_000);
    await eventually(async () => (await redis().zscore(keys.fleetWorkers(), victimId)) !== null, 'the victim back on the roster');
    // Its late answer to the send is applied unfenced (the agent's answer about our send is the truth whoever holds the
    // row); its follows may claim their tasks again (a new fence: the survivor's writes are then the refused ones).
    // Either way nothing is sent again and every workflow finishes once.
    await eventually(async () => victim!.stdoutLines().some((line) => line.includes('"msg":"task created"')), 'the victim applied its late answer');

    held.release();
    for (const { id } of [...followed, stalled]) await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', `workflow ${id} completed`, 60_000);
    const stalledRecord = (await producer.journal.getDelegation(stalledRef))!;
    for (const { messageId } of [...followed, { messageId: stalledRecord.messageId }]) expect(agent.sendMessageCount(messageId), messageId).toBe(1);
    expect(stalledRecord.sendCount).toBe(1);
    expect(await adoptions()).toBe(1);
    await eventually(async () => (await producer!.journal.unfinishedCount()) === 0, 'index drained');
    expect(victim.child.exitCode).toBeNull();
  }, 180_000);
});
