/**
 * `pnpm tsx --conditions=@durable-a2a/source bench/tenant-quota.ts [writes] [rounds]`: what a tenant quota costs a
 * creation (docs/tenants.md "Quotas"). Sequential `createWorkflow` calls on one connection, median ms per call, in
 * alternating rounds: without a quota (the baseline), with a quota that has room, and refused at a full quota (the
 * script checks `QUOTA_CHECKED_MEMBERS` oldest members, all still unfinished). Reported as ratios to the baseline
 * measured in the same run.
 */
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Journal, JournalError, QUOTA_CHECKED_MEMBERS, tenantWorkflowId } from '../packages/shared/src/index.ts';
import { startRedisServer } from '../test/harness/redis.ts';

/** The `p`th percentile of `values`. */
const percentile = (values: number[], p: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))] ?? Number.NaN;

const writes = Number(process.argv[2] ?? '2000');
const rounds = Number(process.argv[3] ?? '5');
const server = await startRedisServer();
const redis = new Redis(server.url);
const fields = { state: 'RUNNING', createdAt: '1000', updatedAt: '1000' };

type Mode = 'no quota' | 'quota with room' | 'refused at a full quota';

/** Median ms of `writes` creations in `mode` under a fresh prefix. */
async function measure(mode: Mode, round: number): Promise<number> {
  const journal = new Journal(redis, { prefix: `bench-${round}-${mode.replaceAll(' ', '-')}` });
  const room = { maxInFlight: 10_000_000, maxStored: 10_000_000 };
  const full = { maxInFlight: QUOTA_CHECKED_MEMBERS, maxStored: 10_000_000 };
  if (mode === 'refused at a full quota') for (let index = 0; index < QUOTA_CHECKED_MEMBERS; index++) await journal.createWorkflow(tenantWorkflowId('bench', `fill-${index}`), fields, undefined, undefined, undefined, full);
  const took: number[] = [];
  for (let index = 0; index < writes; index++) {
    const at = performance.now();
    try {
      await journal.createWorkflow(tenantWorkflowId('bench', `w-${index}`), fields, undefined, undefined, undefined, mode === 'no quota' ? undefined : mode === 'quota with room' ? room : full);
    } catch (error) {
      if (!(error instanceof JournalError && error.code === 'QUOTA_IN_FLIGHT')) throw error;
    }
    took.push(performance.now() - at);
  }
  return percentile(took, 50);
}

const modes: Mode[] = ['no quota', 'quota with room', 'refused at a full quota'];
const medians = new Map<Mode, number[]>(modes.map((mode) => [mode, []]));
try {
  for (let round = 0; round < rounds; round++) {
    for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) medians.get(mode)!.push(await measure(mode, round));
  }
  const baseline = percentile(medians.get('no quota')!, 50);
  for (const mode of modes) {
    const median = percentile(medians.get(mode)!, 50);
    console.log(`${mode.padEnd(24)} ${median.toFixed(3)} ms per createWorkflow (median of ${rounds} round medians of ${writes}), ratio ${(median / baseline).toFixed(2)}`);
  }
} finally {
  redis.disconnect();
  await server.stop();
}
