/**
 * `pnpm chaos`: the full chaos run (CHAOS_WORKFLOWS, default 1000; CHAOS_SEED
 * to replay; CHAOS_WORKERS, CHAOS_IN_FLIGHT, CHAOS_FAULT_MEAN_MS to tune; CHAOS_REDIS_REFUSALS=0 leaves out
 * the OOM windows and READONLY flips).
 * Prints the seed first and the report last; exits 1 on any violation.
 */
import { startRedisServer } from '../harness/redis.ts';
import { runChaos, seedFromEnvironment } from './chaos.ts';
import { quietSdkConsole } from '../harness/quiet-sdk.ts';

quietSdkConsole();

const seed = seedFromEnvironment();
const workflows = Number(process.env.CHAOS_WORKFLOWS ?? 1000);
console.log(`chaos: CHAOS_SEED=${seed} CHAOS_WORKFLOWS=${workflows}`);
const redis = await startRedisServer({ appendOnly: true, appendFsync: 'everysec' });
let failed = true;
try {
  const report = await runChaos({
    seed,
    workflows,
    redis,
    redisRestarts: true,
    // Redis up but refusing writes: OOM windows and READONLY flips (CHAOS_REDIS_REFUSALS=0 to leave them out).
    redisRefusals: process.env.CHAOS_REDIS_REFUSALS !== '0',
    workers: Number(process.env.CHAOS_WORKERS ?? 3),
    inFlight: Number(process.env.CHAOS_IN_FLIGHT ?? 60),
    faultMeanMs: Number(process.env.CHAOS_FAULT_MEAN_MS ?? 1_000),
    log: (line) => console.log(`[${new Date().toISOString().slice(11, 23)}] ${line}`),
  });
  console.log(JSON.stringify({ ...report, leakedBookings: report.leakedBookings.length, leakedExamples: report.leakedBookings.slice(0, 5), violations: report.violations.length }, null, 2));
  for (const violation of report.violations.slice(0, 50)) console.log(`VIOLATION: ${violation}`);
  failed = report.violations.length > 0;
  console.log(failed ? `chaos FAILED (replay with CHAOS_SEED=${seed})` : `chaos passed: ${workflows} workflows in ${Math.round(report.durationMs / 1000)} s (CHAOS_SEED=${seed})`);
} finally {
  await redis.stop();
}
process.exit(failed ? 1 : 0);
