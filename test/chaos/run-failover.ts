/**
 * `pnpm chaos:failover`: the failover chaos (test/chaos/failover.ts) twice, each on a fresh Sentinel set:
 * with the journal's durability setting on (WAIT for one replica; every invariant must hold) and off
 * (what the failover took is printed: the measured cost of not waiting). CHAOS_WORKFLOWS (default 200),
 * CHAOS_SEED to replay, FAILOVER_LAG_MS (default 800), FAILOVER_MODES (`on,off`), FAILOVER_WORKFLOW_TIMEOUT_MS
 * (default 180000: a workflow not settled by then is a violation). Exits 1 if the run
 * with WAIT on broke an invariant.
 */
import { quietSdkConsole } from '../harness/quiet-sdk.ts';
import { startSentinelSet } from '../harness/sentinel.ts';
import { seedFromEnvironment } from './chaos.ts';
import { runFailoverChaos } from './failover.ts';

quietSdkConsole();

/** Violations counted by kind (the text before the first workflow-specific detail). */
function violationKinds(violations: string[]): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const violation of violations) {
    const kind = /is gone/.test(violation)
      ? 'acknowledged workflow gone'
      : /unreadable/.test(violation)
        ? 'acknowledged workflow unreadable'
        : /reply .* executed/.test(violation)
          ? 'reply executed twice'
          : /executed \d+ times/.test(violation)
            ? 'message executed twice'
            : /cancelled \d+ times/.test(violation)
              ? 'compensation run twice'
              : /not settled after/.test(violation)
                ? 'not settled in time (ended later)'
                : /ended .* without a reason/.test(violation)
                  ? 'never ended'
                  : /unfinished index/.test(violation)
                    ? 'unfinished index not drained'
                    : 'other';
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  return kinds;
}

const seed = seedFromEnvironment();
const workflows = Number(process.env.CHAOS_WORKFLOWS ?? 200);
const lagMs = Number(process.env.FAILOVER_LAG_MS ?? 800);
const modes = (process.env.FAILOVER_MODES ?? 'on,off').split(',').map((mode) => mode.trim());
console.log(`chaos:failover: CHAOS_SEED=${seed} CHAOS_WORKFLOWS=${workflows} FAILOVER_LAG_MS=${lagMs}`);
let failed = false;
for (const mode of modes) {
  const sentinelSet = await startSentinelSet();
  try {
    const report = await runFailoverChaos({
      sentinelSet,
      seed,
      workflows,
      awaitReplica: mode === 'on',
      lagMs,
      workflowTimeoutMs: Number(process.env.FAILOVER_WORKFLOW_TIMEOUT_MS ?? 180_000),
      log: (line) => console.log(`[${new Date().toISOString().slice(11, 23)}] WAIT ${mode}: ${line}`),
    });
    console.log(JSON.stringify({ wait: mode, ...report, violations: report.violations.length }, null, 2));
    // The slow ones last: what was lost or done twice matters first.
    const ordered = [...report.violations].sort((a, b) => Number(/not settled after/.test(a)) - Number(/not settled after/.test(b)));
    for (const violation of ordered.slice(0, 30)) console.log(`WAIT ${mode} VIOLATION: ${violation}`);
    console.log(`WAIT ${mode} violations by kind: ${JSON.stringify(violationKinds(report.violations))}`);
    if (mode === 'on' && report.violations.length > 0) failed = true;
    console.log(`WAIT ${mode}: ${report.violations.length} violation(s) in ${Math.round(report.durationMs / 1000)} s`);
  } finally {
    await sentinelSet.stop();
  }
}
console.log(failed ? `chaos:failover FAILED with WAIT on (replay with CHAOS_SEED=${seed})` : 'chaos:failover: WAIT on held every invariant');
process.exit(failed ? 1 : 0);
