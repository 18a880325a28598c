/**
 * `pnpm fuzz`: the variant-agent fuzzer against a private redis-server and one
 * in-process fleet. Environment (all optional):
 *   FUZZ_SEED       fast-check seed (replay); default: a fresh one, printed
 *   FUZZ_RUNS       runs before shrinking; default 500
 *   FUZZ_KINDS      comma-separated deviation kinds; default every kind
 *   FUZZ_PER_KIND   1 = one check per kind (FUZZ_RUNS each), then a pass/fail table
 *   FUZZ_DEADLINE_MS  time a delegation has to settle; default 6000
 *   FUZZ_TIME_LIMIT_MS  stop generating/shrinking a check after this long; default none
 *   FUZZ_VERBOSE    1 = one line per run
 *   FUZZ_BEHAVIOUR  a behaviour as JSON (a printed counterexample): run it FUZZ_RUNS times (default 1), verbose, no generation
 * Exits 1 when any check failed.
 */
import { quietSdkConsole } from '../harness/quiet-sdk.ts';
import { startRedisServer } from '../harness/redis.ts';
import { parseKinds, type Behaviour, type DeviationKind } from './grammar.ts';
import { checkConformance, describeFailure } from './property.ts';
import { startFuzzSession } from './session.ts';

quietSdkConsole();

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const numRuns = Number(process.env.FUZZ_RUNS ?? 500);
const kinds = parseKinds(process.env.FUZZ_KINDS);
const perKind = process.env.FUZZ_PER_KIND === '1';
const timeLimitMs = process.env.FUZZ_TIME_LIMIT_MS ? Number(process.env.FUZZ_TIME_LIMIT_MS) : undefined;
const verbose = process.env.FUZZ_VERBOSE === '1';
console.log(`fuzz: FUZZ_SEED=${seed} FUZZ_RUNS=${numRuns} FUZZ_KINDS=${kinds.join(',')}${perKind ? ' FUZZ_PER_KIND=1' : ''}`);

const redis = await startRedisServer();
const session = await startFuzzSession({ redisUrl: redis.url, deadlineMs: Number(process.env.FUZZ_DEADLINE_MS ?? 6_000) });
if (process.env.FUZZ_BEHAVIOUR) await replay(JSON.parse(process.env.FUZZ_BEHAVIOUR) as Behaviour, Number(process.env.FUZZ_RUNS ?? 1));
const groups: DeviationKind[][] = perKind ? kinds.map((kind) => [kind]) : [kinds];
const results: { kinds: string; passed: boolean; runs: number; seconds: number; report: string }[] = [];
try {
  for (const group of groups) {
    const started = Date.now();
    let count = 0;
    const details = await checkConformance({
      session,
      kinds: group,
      seed,
      numRuns,
      timeLimitMs,
      onRun: (behaviour, outcome) => {
        count++;
        if (verbose || outcome.violations.length > 0) {
          console.log(`  run ${count} ${outcome.elapsedMs} ms ${outcome.violations.length ? `FAIL ${outcome.violations[0]}` : 'ok'} ${JSON.stringify(behaviour)}`);
          if (verbose) console.log(`    ${outcome.trace}`);
        }
      },
    });
    const seconds = Math.round((Date.now() - started) / 100) / 10;
    results.push({ kinds: group.join(','), passed: !details.failed, runs: count, seconds, report: describeFailure(details) });
    console.log(`${group.join(',')}: ${details.failed ? 'FAILED' : 'passed'} (${count} runs incl. shrinking, ${seconds} s)`);
    if (details.failed) console.log(describeFailure(details));
  }
} finally {
  await session.close();
  await redis.stop();
}
console.log('\nsummary');
for (const result of results) console.log(`  ${result.passed ? 'pass' : 'FAIL'}  ${result.kinds}  (${result.runs} runs, ${result.seconds} s)`);
const failed = results.some((result) => !result.passed);
console.log(failed ? `fuzz FAILED (replay with FUZZ_SEED=${seed})` : `fuzz passed (FUZZ_SEED=${seed})`);
process.exit(failed ? 1 : 0);

/** Runs one behaviour `times` times with its trace and violations, then exits (1 when any run failed). */
async function replay(behaviour: Behaviour, times: number): Promise<never> {
  let failed = 0;
  try {
    for (let run = 1; run <= Math.max(1, Math.min(times, 1_000)); run++) {
      const outcome = await session.run(behaviour);
      if (outcome.violations.length > 0) failed++;
      console.log(`replay ${run}: ${outcome.elapsedMs} ms ${outcome.violations.map((violation) => `${violation.invariant}: ${violation.evidence}`).join('; ') || 'ok'}\n  ${outcome.trace}`);
    }
  } finally {
    await session.close();
    await redis.stop();
  }
  process.exit(failed > 0 ? 1 : 0);
}
