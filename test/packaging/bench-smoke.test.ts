/**
 * A tiny run of each benchmark (bench/): the figures are well-formed numbers
 * and the invariants hold. No timing thresholds: performance is judged by
 * `pnpm bench` as ratios against a baseline measured in the same run. The
 * benchmarks are called directly, never through bench/run.ts, so nothing is
 * written to bench/results.md.
 */
import { describe, expect, it } from 'vitest';
import type { BenchResult } from '../../bench/common.ts';
import { run as throughput } from '../../bench/throughput.ts';
import { run as redisCost } from '../../bench/redis-cost.ts';
import { run as recovery } from '../../bench/recovery.ts';
import { run as reconnectStorm } from '../../bench/reconnect-storm.ts';
import { run as footprint } from '../../bench/footprint.ts';
import { run as durability } from '../../bench/durability.ts';

/** ~20 delegations, 50 streams, 1,000 finished rows. */
const SMOKE_SCALE = 0.02;
const STREAMS_SCALE = 0.05;

const figure = (result: BenchResult, startsWith: string): number => {
  const found = result.figures.find((candidate) => candidate.metric.startsWith(startsWith));
  if (!found) throw new Error(`${result.name}: no figure starting with "${startsWith}"`);
  return found.value;
};

function expectWellFormed(result: BenchResult): void {
  expect(result.figures.length).toBeGreaterThan(0);
  for (const { metric, value } of result.figures) {
    expect(Number.isFinite(value), `${result.name}: ${metric} = ${value}`).toBe(true);
    // "added latency" is a difference of two percentiles of small samples on a shared box: either sign is well formed.
    if (!metric.includes('added latency')) expect(value, `${result.name}: ${metric}`).toBeGreaterThanOrEqual(0);
  }
}

describe('benchmarks at smoke scale', () => {
  it('throughput: every delegation completes on both sides in every setting; ratios and CPU per delegation are positive', async () => {
    const result = await throughput(SMOKE_SCALE);
    expectWellFormed(result);
    // 4 settings × 3 rounds × 12 delegations per side.
    expect(figure(result, 'bare completed')).toBe(144);
    expect(figure(result, 'durable completed')).toBe(144);
    expect(figure(result, 'agent 50 ms, C=50: throughput ratio')).toBeGreaterThan(0);
    expect(figure(result, 'agent 0 ms, C=50: CPU ratio')).toBeGreaterThan(0);
    expect(figure(result, 'agent 0 ms, C=50: durable Node CPU per delegation')).toBeGreaterThan(0);
    expect(figure(result, 'C=1, agent 50 ms: durable p50')).toBeGreaterThan(0);
    const eventLoop = result.figures.find((candidate) => candidate.metric.startsWith('agent 0 ms, C=50: event loop busy'))!;
    expect(eventLoop.value).toBeGreaterThan(0);
    expect(eventLoop.value).toBeLessThanOrEqual(1);
  }, 300_000);

  it('redis cost: commands and CPU per delegation are positive on both sides', async () => {
    const result = await redisCost(SMOKE_SCALE);
    expectWellFormed(result);
    expect(figure(result, 'durable-a2a: Redis commands per delegation')).toBeGreaterThan(0);
    expect(figure(result, 'BullMQ floor (2 jobs): Redis commands per delegation')).toBeGreaterThan(0);
    expect(figure(result, 'commands ratio')).toBeGreaterThan(0);
    expect(figure(result, 'durable-a2a: Redis command time per delegation')).toBeGreaterThan(0);
  }, 180_000);

  it('recovery: every record is reattached or terminal, with and without history; one SendMessage each', async () => {
    const result = await recovery(0.001); // 10 in flight, 1,000 finished rows
    expectWellFormed(result);
    const inFlight = figure(result, 'delegations in flight');
    expect(figure(result, 'finished records in the journal')).toBe(1_000);
    const reached = result.figures.find((candidate) => candidate.metric.startsWith('reattached or terminal'))!;
    expect(reached.value).toBe(inFlight);
    expect(reached.unit).toBe(`/ ${inFlight} of ${inFlight}`);
    expect(figure(result, 'SendMessage calls')).toBe(inFlight);
    expect(figure(result, 'empty journal: SIGKILL')).toBeGreaterThan(0);
    expect(figure(result, 'setup: streams opened per second, all')).toBeGreaterThan(0);
  }, 300_000);

  it('reconnect storm: every followed task is subscribed again', async () => {
    const result = await reconnectStorm(STREAMS_SCALE);
    expectWellFormed(result);
    expect(figure(result, 'followed tasks')).toBe(50);
    expect(figure(result, 'subscriptions until all reattached')).toBeGreaterThanOrEqual(50);
    expect(figure(result, 'peak subscriptions')).toBeGreaterThanOrEqual(figure(result, 'uniform average'));
  }, 300_000);

  it('durability: WAIT on and off measured in the same run; every round drains', async () => {
    const result = await durability(SMOKE_SCALE);
    expectWellFormed(result);
    expect(figure(result, 'one journal write + WAIT 1')).toBeGreaterThan(0);
    expect(figure(result, 'write latency ratio')).toBeGreaterThan(0);
    expect(figure(result, 'throughput ratio')).toBeGreaterThan(0);
  }, 300_000);

  it('footprint: bytes per record and RSS are positive', async () => {
    const result = await footprint(STREAMS_SCALE);
    expectWellFormed(result);
    expect(figure(result, 'journal keys per finished record')).toBeGreaterThan(0);
    expect(figure(result, 'worker RSS with')).toBeGreaterThan(0);
  }, 300_000);
});
