/**
 * The conformance property: for every generated behaviour (over the selected
 * deviation kinds), one run against the session's fleet breaks no invariant.
 * fast-check drives generation and shrinking; a failure reports the smallest
 * behaviour, the violated invariants and the seed that replays it.
 */
import fc from 'fast-check';
import { behaviourArbitrary } from './generators.ts';
import type { Behaviour, DeviationKind } from './grammar.ts';
import type { FuzzSession } from './session.ts';

export interface ConformanceOptions {
  session: FuzzSession;
  kinds: readonly DeviationKind[];
  /** fast-check seed (FUZZ_SEED). Default: fast-check picks one and prints it on failure. */
  seed?: number;
  /** Runs before shrinking (FUZZ_RUNS). */
  numRuns: number;
  /** Stops running behaviours after this long (ms), counted from the property's creation; a failure found so far is still reported. */
  timeLimitMs?: number;
  /** Deviations per behaviour, at most. Default 2. */
  maxDeviations?: number;
  /** Called after every run (progress lines in `pnpm fuzz`). */
  onRun?: (behaviour: Behaviour, outcome: { violations: string[]; elapsedMs: number; trace: string }) => void;
}

/** Thrown by a run that broke an invariant; its message lists them with evidence. */
export class InvariantViolation extends Error {
  override readonly name = 'InvariantViolation';
}

/** The property over the selected kinds. */
export function conformanceProperty(options: ConformanceOptions): fc.IAsyncPropertyWithHooks<[Behaviour]> {
  // Past the time limit a behaviour counts as passing without a run: generation stops adding runs and shrinking
  // stops at the smallest failure so far. (fast-check's own interruptAfterTimeLimit leaves the running
  // behaviour going in the background, where it would overlap the next run.)
  const stopAt = options.timeLimitMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeLimitMs;
  return fc.asyncProperty(behaviourArbitrary(options.kinds, options.maxDeviations), async (behaviour) => {
    if (Date.now() > stopAt) return;
    const outcome = await options.session.run(behaviour);
    const violations = outcome.violations.map((violation) => `${violation.invariant}: ${violation.evidence}`);
    options.onRun?.(behaviour, { violations, elapsedMs: outcome.elapsedMs, trace: outcome.trace });
    if (violations.length > 0) throw new InvariantViolation(violations.join('\n'));
  });
}

/** fast-check parameters for `options`: seed and run count; no per-run timeout (the session bounds each run). */
export function conformanceParameters(options: ConformanceOptions): fc.Parameters<[Behaviour]> {
  return { numRuns: options.numRuns, ...(options.seed === undefined ? {} : { seed: options.seed }) };
}

/** Runs the property; resolves with fast-check's details (failed, counterexample, seed, numRuns, numShrinks). */
export async function checkConformance(options: ConformanceOptions): Promise<fc.RunDetails<[Behaviour]>> {
  return fc.check(conformanceProperty(options), conformanceParameters(options));
}

/** The report line of a failed check: the smallest behaviour as JSON, the seed and the violations. */
export function describeFailure(details: fc.RunDetails<[Behaviour]>): string {
  if (!details.failed) return 'passed';
  const behaviour = details.counterexample?.[0];
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  return [
    `seed ${details.seed}, path "${details.counterexamplePath}", ${details.numShrinks} shrinks`,
    `smallest behaviour: ${JSON.stringify(behaviour)}`,
    `violations:\n  ${error.split('\n').join('\n  ')}`,
  ].join('\n');
}
