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

/** The kind of a violation (the text before the first workflow-specific detail). */
function violationKind(violation: string): string {
  if (/is gone|unreadable/.test(violation)) return 'acknowledged workflow lost';
  if (/reply .* executed/.test(violation)) return 'reply executed twice';
  if (/executed \d+ times/.test(violation)) return 'message executed twice';
  if (/cancelled \d+ times/.test(violation)) return 'compensation run twice';
  if (/not settled after/.test(violation)) return 'not settled in time (ended later)';
  if (/ended .* without a reason/.test(violation)) return 'never ended';
  if (/unfinished index/.test(violation)) return 'unfinished index not drained';
  return 'other';
}

/** Violations grouped by kind; a lost workflow counts once (it is both unreadable in the run and gone at the end). */
function violationsByKind(violations: string[]): Map<string, string[]> {
  const byKind = new Map<string, string[]>();
  const lost = new Set<string>();
  for (const violation of violations) {
    const kind = violationKind(violation);
    if (kind === 'acknowledged workflow lost') {
      const id = /^(?:workflow )?(\S+)/.exec(violation)![1]!;
      if (lost.has(id)) continue;
      lost.add(id);
    }
    byKind.set(kind, [...(byKind.get(kind) ?? []), violation]);
  }
  return byKind;
}

const seed = seedFromEnvironment();
const workflows = Number(process.env.CHAOS_WORKFLOWS ?? 200);
const lagMs = Number(process.env.FAILOVER_LAG_MS ?? 800);
const modes = (process.env.FAILOVER_MODES ?? 'on,off').split(',').map((mode) => mode.trim());
console.log(`chaos:failover: CHAOS_SEED=${seed} CHAOS_WORKFLOWS=${workflows} FAILOVER_LAG_MS=${lagMs}`);
let failed = false;
for (const mode of modes) {
  const sentinelSet = await startSentinelSet();
  const refusals: Record<string, number> = {};
  try {
    const report = await runFailoverChaos({
      sentinelSet,
      seed,
      workflows,
      awaitReplica: mode === 'on',
      lagMs,
      workflowTimeoutMs: Number(process.env.FAILOVER_WORKFLOW_TIMEOUT_MS ?? 180_000),
      log: (line) => {
        // Producer calls refused and retried with the same id, by error.
        const refused = /^start \S+ failed \((\w+)/.exec(line);
        if (refused) refusals[refused[1]!] = (refusals[refused[1]!] ?? 0) + 1;
        console.log(`[${new Date().toISOString().slice(11, 23)}] WAIT ${mode}: ${line}`);
      },
    });
    console.log(JSON.stringify({ wait: mode, ...report, violations: report.violations.length }, null, 2));
    const byKind = violationsByKind(report.violations);
    for (const [kind, examples] of byKind) {
      for (const violation of examples.slice(0, 8)) console.log(`WAIT ${mode} VIOLATION (${kind}): ${violation}`);
      if (examples.length > 8) console.log(`WAIT ${mode} VIOLATION (${kind}): … ${examples.length - 8} more`);
    }
    console.log(`WAIT ${mode} violations by kind: ${JSON.stringify(Object.fromEntries([...byKind].map(([kind, examples]) => [kind, examples.length])))}`);
    console.log(`WAIT ${mode} producer calls refused and retried, by error: ${JSON.stringify(refusals)}`);
    if (mode === 'on' && report.violations.length > 0) failed = true;
    console.log(`WAIT ${mode}: ${report.violations.length} violation(s) in ${Math.round(report.durationMs / 1000)} s`);
  } finally {
    await sentinelSet.stop();
  }
}
console.log(failed ? `chaos:failover FAILED with WAIT on (replay with CHAOS_SEED=${seed})` : 'chaos:failover: WAIT on held every invariant');
process.exit(failed ? 1 : 0);
