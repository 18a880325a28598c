/**
 * The short chaos run of `pnpm test` (~30 workflows; `pnpm chaos` runs 1,000):
 * the same code as test/chaos/run.ts, with every fault kind injected at least
 * once (Redis restarts only on a single server; slot migrations only on a Redis
 * Cluster, `DA2A_TEST_REDIS=cluster`). Replay a failure with the printed CHAOS_SEED.
 */
import { describe, expect, it } from 'vitest';
import { testsOnCluster, useRedisServer } from '../harness/redis.ts';
import type { RedisClusterHandle } from '../harness/redis-cluster.ts';
import { runChaos, seedFromEnvironment, type FaultKind } from './chaos.ts';

const redisServer = useRedisServer({ appendOnly: true, appendFsync: 'everysec' });

describe('chaos (short)', () => {
  it('30 workflows across 3 workers under worker kills, dropped streams, forgetful agents and Redis restarts: nothing lost, nothing sent twice where findable', async () => {
    const seed = seedFromEnvironment();
    console.log(`chaos: CHAOS_SEED=${seed}`);
    const first: FaultKind[] = ['drop-streams', 'kill-worker', 'agent-forgets', 'redis-restart', 'slot-migration'];
    const report = await runChaos({
      seed,
      workflows: Number(process.env.CHAOS_TEST_WORKFLOWS ?? 30),
      redis: redisServer(),
      // A cluster handle cannot restart; those runs keep the other faults.
      redisRestarts: !testsOnCluster(),
      // On a cluster, slots move instead (a workflow's or the queues', to another master and back).
      ...(testsOnCluster() ? { cluster: redisServer() as RedisClusterHandle } : {}),
      inFlight: 12,
      faultMeanMs: 600,
      faultsFirst: first,
      workflowTimeoutMs: 35_000,
      prefix: `chaos${seed}`,
    });
    console.log(JSON.stringify({ ...report, violations: report.violations.length }));
    expect(report.violations, `replay with CHAOS_SEED=${seed}`).toEqual([]);
    expect(Object.values(report.states).reduce((a, b) => a + b, 0)).toBe(report.workflows);
    for (const kind of first) if (kind !== (testsOnCluster() ? 'redis-restart' : 'slot-migration')) expect(report.faults[kind], kind).toBeGreaterThan(0);
  }, 90_000);
});
