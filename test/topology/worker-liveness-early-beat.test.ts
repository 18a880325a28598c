/**
 * A dead worker named when it turns silent, not at the next regular beat (docs/recovery.md "How soon"): each heartbeat
 * answers how long until the next other worker on the roster turns silent (`Heartbeat.nextSilentInMs`), and a worker
 * beats once more at that moment when it comes before its next regular beat. Before, a dead worker's liveness key ran
 * out and the peers noticed it only at their next beat, up to a beat period (a third of the TTL) later.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { Journal } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);
let counter = 0;

/** Redis's clock in ms, as heartbeat-2.lua reads it. */
const redisNow = async (): Promise<number> => {
  const [seconds, micros] = await redis().time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
};

describe('the next silence a heartbeat answers', () => {
  it('none while no other worker is listed; a peer that just beat turns silent one TTL after its beat', async () => {
    const journal = new Journal(redis(), { prefix: `early${++counter}` });
    expect((await journal.heartbeat('a', 60_000)).nextSilentInMs).toBeUndefined();
    const before = await redisNow();
    await journal.heartbeat('b', 60_000);
    const beat = await journal.heartbeat('a', 60_000);
    const after = await redisNow();
    expect(beat.nextSilentInMs).toBeGreaterThan(60_000 - (after - before) - 1);
    expect(beat.nextSilentInMs).toBeLessThanOrEqual(60_000);
  });

  it('property: the oldest peer not yet silent, whatever the ages on the roster; after a fleet-wide silence, one TTL', async () => {
    const ttlMs = 3_000;
    // Ages clear of the TTL's edge by more than the few ms the script's clock can differ from the reads around it.
    const age = fc.oneof(fc.integer({ min: 0, max: ttlMs - 300 }), fc.integer({ min: ttlMs + 300, max: 3 * ttlMs }));
    await fc.assert(
      fc.asyncProperty(fc.array(age, { minLength: 0, maxLength: 6 }), async (ages) => {
        const journal = new Journal(redis(), { prefix: `early${++counter}` });
        const before = await redisNow();
        if (ages.length > 0) await redis().zadd(journal.keys.fleetWorkers(), ...ages.flatMap((ageMs, index) => [before - ageMs, `peer${index}`]));
        const beat = await journal.heartbeat('me', ttlMs);
        const after = await redisNow();
        // Under load the reads around the script may be far apart: that run's bounds say nothing (no timed assertion).
        if (after - before >= 250) return;
        const live = ages.filter((ageMs) => ageMs < ttlMs);
        if (ages.length === 0) expect(beat.nextSilentInMs).toBeUndefined();
        else if (live.length === 0) expect(beat.nextSilentInMs).toBe(ttlMs); // every entry given one TTL from now
        else {
          const oldest = Math.max(...live);
          // The script's now lies between the two reads: the peer's silence is its beat + TTL, from that now.
          expect(beat.nextSilentInMs).toBeGreaterThanOrEqual(before - oldest + ttlMs - after);
          expect(beat.nextSilentInMs).toBeLessThanOrEqual(ttlMs - oldest);
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe('a worker beats again when a peer turns silent', () => {
  let fleet: Fleet | undefined;
  afterEach(async () => {
    await fleet?.close();
    fleet = undefined;
  });

  it('a peer that stops beating is named and its follow lease ended at its silence, long before the next regular beat', async () => {
    const prefix = `early${++counter}`;
    const journal = new Journal(redis(), { prefix, retentionMs: 60_000 });
    const ref = { workflowId: `wf-early${counter}`, delegationId: 'main.1' };
    expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
    // A 10 min TTL: the fleet's regular beats come 200 s apart, past this test's bounds, so only the early beat can name
    // the peer in time, however loaded the machine. The peer's last beat was 599 s ago (a beat of its own with a 1 s
    // TTL, then its roster entry dated back): its key runs out, and it turns silent, 1 s from now.
    const ttlMs = 600_000;
    await journal.heartbeat('peer', 1_000);
    await redis().zadd(journal.keys.fleetWorkers(), (await redisNow()) - ttlMs + 1_000, 'peer');
    expect(await journal.lease(ref, 'acquire', 'peer/1', 600_000)).toBe(true);
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'watcher', livenessTtlMs: ttlMs, lockDurationMs: 600_000 });
    // The old code named the peer at the fleet's first regular beat, 200 s after its start: these generous bounds (60 s
    // each, the peer silent after 1 s) stay far below it.
    await eventually(async () => (await redis().zscore(journal.keys.fleetWorkers(), 'peer')) === null, 'the silent peer forgotten', 60_000);
    await eventually(async () => !(await journal.isFollowed(ref)), "the dead peer's follow lease ended", 60_000);
    expect(await redis().zrange(journal.keys.fleetWorkers(), 0, -1)).toEqual(['watcher']);
  }, 150_000);
});
