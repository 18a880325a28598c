/**
 * `pnpm chaos`: the full chaos run (CHAOS_WORKFLOWS, default 1000; CHAOS_SEED
 * to replay; CHAOS_WORKERS, CHAOS_IN_FLIGHT, CHAOS_FAULT_MEAN_MS to tune; CHAOS_REDIS_REFUSALS=0 leaves out
 * the OOM windows and READONLY flips; CHAOS_REDIS=cluster runs on a local three-master Redis Cluster, with slot
 * migrations and OOM windows on one master instead of Redis restarts and READONLY flips).
 * Prints the seed first and the report last; exits 1 on any violation.
 */
import { startRedisServer } from '../harness/redis.ts';
import { startRedisCluster } from '../harness/redis-cluster.ts';
import { runChaos, seedFromEnvironment } from './chaos.ts';
import { quietSdkConsole } from '../harness/quiet-sdk.ts';

quietSdkConsole();

const seed = seedFromEnvironment();
const workflows = Number(process.env.CHAOS_WORKFLOWS ?? 1000);
const onCluster = process.env.CHAOS_REDIS === 'cluster';
if (process.env.CHAOS_REDIS !== undefined && !onCluster) throw new Error(`CHAOS_REDIS: 'cluster' or unset, not ${process.env.CHAOS_REDIS}`);
console.log(`chaos: CHAOS_SEED=${seed} CHAOS_WORKFLOWS=${workflows}${onCluster ? ' CHAOS_REDIS=cluster' : ''}`);
// A cluster's nodes run with AOF (everysec, Redis' default) and cannot be restarted by the harness.
const cluster = onCluster ? await startRedisCluster() : undefined;
const redis = cluster ?? (await startRedisServer({ appendOnly: true, appendFsync: 'everysec' }));
let failed = true;
try {
  const report = await runChaos({
    seed,
    workflows,
    redis,
    redisRestarts: !onCluster,
    // Redis up but refusing writes: OOM windows and READONLY flips (CHAOS_REDIS_REFUSALS=0 to leave them out).
    redisRefusals: process.env.CHAOS_REDIS_REFUSALS !== '0',
    // On a cluster: slot migrations (a workflow's slot or the queues' moved to another master and back), the first faults.
    ...(cluster ? { cluster, faultsFirst: ['slot-migration' as const, 'redis-oom' as const, 'slot-migration' as const] } : {}),
    workers: Number(process.env.CHAOS_WORKERS ?? 3),
    inFlight: Number(process.env.CHAOS_IN_FLIGHT ?? 60),
    faultMeanMs: Number(process.env.CHAOS_FAULT_MEAN_MS ?? 1_000),
    log: (line) => console.log(`[${new Date().toISOString().slice(11, 23)}] ${line}`),
  });
  console.log(JSON.stringify({ ...report, leakedBookings: report.leakedBookings.length, leakedExamples: report.leakedBookings.slice(0, 5), violations: report.violations.length }, null, 2));
  for (const violation of report.violations.slice(0, 50)) console.log(`VIOLATION: ${violation}`);
  failed = report.violations.length > 0;
  console.log(failed ? `chaos FAILED (replay with CHAOS_SEED=${seed})` : `chaos passed: ${workflows} workflows${onCluster ? ' on a cluster' : ''} in ${Math.round(report.durationMs / 1000)} s (CHAOS_SEED=${seed})`);
} finally {
  await redis.stop();
}
process.exit(failed ? 1 : 0);
