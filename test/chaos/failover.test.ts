/**
 * The short failover chaos of `pnpm test`, 60 workflows (`pnpm chaos:failover` runs 200, with the durability setting
 * on and off): all of them in flight across two worker processes on a Sentinel set; the replica lags,
 * the primary is SIGKILLed, a replica is promoted. With WAIT for one replica on the critical journal
 * writes, nothing acknowledged is lost and nothing is sent twice where the agent could be searched.
 */
import { describe, expect, it } from 'vitest';
import { seedFromEnvironment } from './chaos.ts';
import { runFailoverChaos } from './failover.ts';
import { useSentinelSet } from '../harness/sentinel.ts';

const sentinelSet = useSentinelSet();

describe('Redis primary failover (short)', () => {
  it('60 workflows in flight, two worker processes, primary SIGKILLed after replica lag, WAIT on: every invariant holds', async () => {
    const seed = seedFromEnvironment();
    console.log(`failover chaos: CHAOS_SEED=${seed}`);
    const report = await runFailoverChaos({ sentinelSet: sentinelSet(), seed, workflows: Number(process.env.FAILOVER_TEST_WORKFLOWS ?? 60), awaitReplica: true, tripShare: 0.1, workflowTimeoutMs: 110_000 });
    console.log(JSON.stringify({ ...report, violations: report.violations.length }));
    for (const violation of report.violations.slice(0, 20)) console.log(`VIOLATION: ${violation}`);
    expect(report.violations, `replay with CHAOS_SEED=${seed}`).toEqual([]);
    expect(report.faults['primary-failover']).toBe(1);
    expect(report.failover.newPrimary).not.toBe(report.failover.oldPrimary);
    expect(Object.values(report.states).reduce((a, b) => a + b, 0)).toBe(report.workflows);
  }, 240_000);
});
