/**
 * `pnpm bench [name …]`: runs all eight benchmarks (or the named ones) at
 * BENCH_SCALE (default 1, sized so the whole run stays under 15 minutes on a
 * 2-core box), prints each one's figures and appends them to bench/results.md.
 * `peers` (against BullMQ and Restate, bench/peers.ts) runs only when named:
 * it starts other systems and takes longer than the rest together.
 */
import type { Benchmark, BenchResult } from './common.ts';
import { appendResults, environment, exactCommand, formatResult, formatSection, RESULTS_FILE } from './report.ts';
import { run as throughput } from './throughput.ts';
import { run as redisCost } from './redis-cost.ts';
import { run as recovery } from './recovery.ts';
import { run as reconnectStorm } from './reconnect-storm.ts';
import { run as footprint } from './footprint.ts';
import { run as durability } from './durability.ts';
import { run as takeover } from './takeover.ts';
import { run as peers } from './peers.ts';
import { run as fairness } from './fairness.ts';

export const BENCHMARKS: Record<string, Benchmark> = {
  throughput,
  'redis-cost': redisCost,
  recovery,
  'reconnect-storm': reconnectStorm,
  footprint,
  durability,
  takeover,
  peers,
  fairness,
};

const args = process.argv.slice(2);
const unknown = args.filter((name) => !(name in BENCHMARKS));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; choose from ${Object.keys(BENCHMARKS).join(', ')}`);
  process.exit(2);
}
const scale = Number(process.env.BENCH_SCALE ?? '1');
if (!(scale > 0)) {
  console.error(`BENCH_SCALE must be a positive number, got ${process.env.BENCH_SCALE}`);
  process.exit(2);
}
// The SDK server logs every refused subscription (task already terminal) with a stack trace; that is expected here.
const consoleError = console.error;
console.error = (...items: unknown[]) => {
  if (typeof items[0] === 'string' && items[0].startsWith('Pre-stream error')) return;
  consoleError(...items);
};

const startedAt = new Date();
const env = environment();
const started = performance.now();
const results: BenchResult[] = [];
/** Benchmarks that run only when named. */
const NAMED_ONLY = new Set(['peers']);
for (const name of args.length > 0 ? args : Object.keys(BENCHMARKS).filter((known) => !NAMED_ONLY.has(known))) {
  const benchStarted = performance.now();
  console.log(`\n▶ ${name} (scale ${scale})`);
  let result: BenchResult;
  try {
    result = await BENCHMARKS[name]!(scale);
  } catch (error) {
    // One failed benchmark must not lose the others' figures: its error is reported in their place.
    console.error(error);
    result = { name, title: 'FAILED', figures: [], notes: [`Failed: ${error instanceof Error ? error.message : String(error)}`] };
    process.exitCode = 1;
  }
  results.push(result);
  console.log(formatResult(result));
  console.log(`  (${((performance.now() - benchStarted) / 1000).toFixed(1)} s)`);
}
const wallSeconds = (performance.now() - started) / 1000;
appendResults(formatSection(results, { command: exactCommand(args), environment: env, wallSeconds, startedAt }));
console.log(`\nTotal ${wallSeconds.toFixed(1)} s; appended to ${RESULTS_FILE}`);
// Agents' abandoned executions and pooled sockets must not keep the process up.
process.exit(process.exitCode ?? 0);
