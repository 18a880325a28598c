/**
 * Worker liveness (docs/recovery.md): the heartbeat and roster scripts, the
 * ending of a dead worker's leases, and a real worker process SIGKILLed with
 * 50 streams open while a peer stays alive: the peer takes every stream over
 * because the dead worker's liveness key is gone (its leases are set to last
 * 10 minutes here, so nothing else could end them within the test), and the
 * agent sees each messageId once.
 */
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { Journal, journalKeys } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { eventually, reconcileOutcomes, spawnWorkerProcess, startTestFleet, type WorkerProcess } from '../harness/fleet.ts';
import { intentRow } from '../harness/journal-rows.ts';
import { useHeldTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer({ appendOnly: true });
const redis = useRedisClient(redisServer);
let counter = 0;

describe('heartbeat, roster and dead workers\' leases', () => {
  let journal: Journal;
  const refOf = (index: number) => ({ workflowId: `wf${counter}-${index}`, delegationId: 'main.1' });

  const setUp = async (rows: number) => {
    journal = new Journal(redis(), { prefix: `live${++counter}`, retentionMs: 60_000 });
    for (let index = 0; index < rows; index++) expect(await journal.createWorkflow(refOf(index).workflowId, { state: 'RUNNING' }, intentRow(refOf(index).workflowId))).toBe(true);
  };

  it('heartbeat: a first beat finds no key and no roster entry, the next finds both; a worker never names itself silent', async () => {
    await setUp(0);
    expect(await journal.heartbeat('a', 60_000)).toEqual({ lapsed: true, listed: false, silent: [] });
    expect(await journal.heartbeat('a', 60_000)).toEqual({ lapsed: false, listed: true, silent: [] });
  });

  it('a worker whose key ran out is named silent, forgotten by exactly one caller, and never while its key lives', async () => {
    await setUp(0);
    await journal.heartbeat('a', 60_000);
    await journal.heartbeat('b', 60_000);
    expect(await journal.forgetWorker('b')).toBe(false); // alive
    await journal.heartbeat('b', 30); // b's last beat: its key runs out 30 ms later
    const silent = await eventually(async () => {
      // A judges with a TTL longer than its beat period (as a worker does: it beats every third of it), else every
      // beat would find nobody beat within a TTL (a Redis that was away) and give the whole roster another TTL.
      const beat = await journal.heartbeat('a', 200);
      return beat.silent.length > 0 && beat.silent;
    }, 'b named silent');
    expect(silent).toEqual(['b']);
    expect(await journal.forgetWorker('b')).toBe(true);
    expect(await journal.forgetWorker('b')).toBe(false); // already forgotten: one sweep per death
    expect((await journal.heartbeat('a', 30)).silent).toEqual([]);
  });

  it('a lapsed key is reported to its own worker at its next beat', async () => {
    await setUp(0);
    await journal.heartbeat('a', 30);
    await eventually(async () => journal.forgetWorker('a'), 'a forgotten');
    expect(await journal.heartbeat('a', 60_000)).toMatchObject({ lapsed: true, listed: false });
  });

  it('endLeasesOf ends only the leases the dead workers\' runs hold', async () => {
    await setUp(4);
    expect(await journal.lease(refOf(0), 'acquire', 'dead/1', 600_000)).toBe(true);
    expect(await journal.lease(refOf(1), 'acquire', 'dead/send/2', 600_000)).toBe(true);
    expect(await journal.lease(refOf(2), 'acquire', 'dead-not/3', 600_000)).toBe(true); // another worker whose id starts alike
    const all = await journal.endLeasesOf(['dead'], [0, 1, 2, 3].map(refOf));
    expect(all).toEqual({
      ended: [
        { ref: refOf(0), holder: 'dead/1' },
        { ref: refOf(1), holder: 'dead/send/2' },
      ],
      left: [],
    });
    expect(await journal.isFollowed(refOf(0))).toBe(false);
    expect(await journal.isFollowed(refOf(1))).toBe(false);
    expect(await journal.isFollowed(refOf(2))).toBe(true);
  });

  it('endLeasesOf leaves the leases its predicate names to their TTL, and reports them', async () => {
    await setUp(3);
    expect(await journal.lease(refOf(0), 'acquire', 'dead/1', 600_000)).toBe(true);
    expect(await journal.lease(refOf(1), 'acquire', 'dead/send/2', 600_000)).toBe(true);
    const all = await journal.endLeasesOf(['dead'], [0, 1, 2].map(refOf), (holder) => holder.includes('/send/'));
    expect(all).toEqual({ ended: [{ ref: refOf(0), holder: 'dead/1' }], left: [{ ref: refOf(1), holder: 'dead/send/2' }] });
    expect(await journal.isFollowed(refOf(0))).toBe(false);
    expect(await journal.leaseHolder(refOf(1))).toBe('dead/send/2');
  });
});

describe('a worker SIGKILLed with streams open', () => {
  const held = useHeldTasks();
  let producer: Producer | undefined;
  let survivor: Fleet | undefined;
  const processes: WorkerProcess[] = [];

  afterEach(async () => {
    held.release();
    await survivor?.close();
    await Promise.all(processes.splice(0).map((worker) => worker.kill()));
    await producer?.close();
  });

  it('50 in flight, a peer alive: the peer takes every stream over because the liveness key is gone; each messageId sent once', async () => {
    const prefix = `takeover${++counter}`;
    const agent = held.agent();
    // Each task works until the test releases it: the takeover is what is measured, not the agent's pace.
    held.hold();
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    // Leases that last 10 minutes: within this test only the dead worker's missing liveness key can end them.
    const timings = { lockDurationMs: 600_000, livenessTtlMs: 3_000 };
    const victim = spawnWorkerProcess({
      ...{ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_LOCK_DURATION_MS: String(timings.lockDurationMs), DA2A_LIVENESS_TTL_MS: String(timings.livenessTtlMs) },
      ...{ DA2A_CONCURRENCY: 'follow=150', DA2A_FOLLOW_SLOTS_PER_AGENT: '150' },
    });
    processes.push(victim);
    await victim.ready;
    const victimId = `${hostname()}-${victim.child.pid}`;
    const started = await Promise.all(Array.from({ length: 50 }, (_, index) => producer!.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `takeover-${index}` })));
    const refs = started.map(({ id }) => ({ workflowId: id, delegationId: 'main.1' }));
    // The follow lease names its holder: `<workerId>/<run>`.
    const keys = journalKeys(prefix);
    const owners = async () => Promise.all(refs.map(async (ref) => (await redis().get(keys.followLease(ref.workflowId, ref.delegationId))) ?? ''));
    await eventually(async () => (await owners()).every((owner) => owner.startsWith(`${victimId}/`)), 'all 50 followed by the first worker', 60_000);

    survivor = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'survivor', ...timings, concurrency: { follow: 150 }, followSlotsPerAgent: 150 });
    await victim.kill('SIGKILL');
    await eventually(async () => (await owners()).every((owner) => owner.startsWith('survivor/')), 'all 50 followed by the survivor', 60_000);
    expect((await survivor.metrics.deadWorkers.get()).values[0]!.value).toBe(1);
    expect((await survivor.metrics.leasesTakenOver.get()).values[0]!.value).toBe(50);

    held.release();
    for (const { id } of started) await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', `workflow ${id} completed`, 60_000);
    expect(started.map(({ messageId }) => agent.sendMessageCount(messageId))).toEqual(started.map(() => 1));
    await eventually(async () => (await producer!.journal.unfinishedCount()) === 0, 'index drained');
  }, 180_000);

  it('killed after the agent took SendMessage, before the task was journaled: adopted by the peer before the send settles, one SendMessage', async () => {
    const prefix = `adopt${++counter}`;
    const agent = held.agent();
    agent.setBehaviour(completesWith('done'));
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    // A 10-minute request timeout: the send settles 10 minutes after it left, so only an early search can adopt it.
    const timings = { lockDurationMs: 600_000, requestTimeoutMs: 600_000, livenessTtlMs: 3_000 };
    const victim = spawnWorkerProcess({
      ...{ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_CRASH_AT: 'send.after-request' },
      ...{ DA2A_LOCK_DURATION_MS: String(timings.lockDurationMs), DA2A_REQUEST_TIMEOUT_MS: String(timings.requestTimeoutMs), DA2A_LIVENESS_TTL_MS: String(timings.livenessTtlMs) },
    });
    processes.push(victim);
    survivor = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'survivor', ...timings, queues: ['reconcile', 'follow', 'verify', 'compensate', 'notify'] });
    await victim.ready;
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'adopt-early' });
    expect((await victim.exited).signal).toBe('SIGKILL');
    await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', 'adopted and completed', 60_000);
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect((await survivor.metrics.adoptions.get()).values[0]!.value).toBe(1);
    expect((await reconcileOutcomes(survivor))['adopted-early']).toBe(1);
    expect((await survivor.metrics.leasesTakenOver.get()).values[0]!.value).toBe(1);
  }, 120_000);
});
