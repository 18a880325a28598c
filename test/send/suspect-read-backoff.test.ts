/**
 * A suspect whose GetTask keeps failing is read on the backoff the round that failed set (policy.ts `suspectRetryAt`:
 * the reconcile job's 1 s doubling), whoever asks for the read: the round's ender, a follow-lease renewal tick (every
 * lockDurationMs / 3, 667 ms here) or a follow run starting. Before, each tick enqueued a read for the next second:
 * the agent was read every tick and the rounds a suspect may fail ran out in about 2 s instead of the backoff's 3 s.
 * Real fleet, push route, raw JSON-RPC agent, real Redis. The gaps are lower bounds (a slow machine only widens them).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_JOB_OPTIONS } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually } from '../harness/fleet.ts';
import { pushScene } from '../harness/push-scene.ts';
import { holder } from '../harness/holders.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();

describe('the reads of a suspect that cannot be read', () => {
  it('GetTask of T2 answers 503 every time while T1 is followed: one read per round, each after the backoff of the round before (before: one per renewal tick, 0.8 s apart), then AMBIGUOUS', async () => {
    const { push, holding, record, agent } = await pushScene({ redisUrl: redisServer().url, keep }, (taskId, received) => holder(taskId, 'WORKING', received), (taskId) => (taskId === 'T2' ? { http: { status: 503, body: '{"error":"busy"}' } } : undefined));
    expect(await push(holding('T2'))).toBe(403);
    await eventually(async () => ((await record()).state === 'AMBIGUOUS' ? true : undefined), 'a person decides', 40_000);
    const reads = agent.calls('GetTask').filter((call) => call.params.id === 'T2').map((call) => call.at);
    const { attempts, backoff } = DEFAULT_JOB_OPTIONS.reconcile;
    expect(reads).toHaveLength(attempts);
    for (let round = 1; round < reads.length; round++) {
      expect(reads[round]! - reads[round - 1]!, `read ${round + 1} after the backoff of round ${round}`).toBeGreaterThanOrEqual(backoff.delay * 2 ** (round - 1));
    }
  }, 60_000);
});
