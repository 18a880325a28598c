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
import { run as peers } from '../../bench/peers.ts';
import { restateServerBinary } from '../../bench/peers/restate-server.ts';
import { SIDE_NAMES } from '../../bench/peers/sides.ts';
import { run as fairness } from '../../bench/fairness.ts';

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

  it('fairness: every delegation completes; the three settings and both ratios are well-formed numbers', async () => {
    const result = await fairness(0.2); // 2 quiet and 20 bursting delegations, one round
    expectWellFormed(result);
    const completed = result.figures.find((candidate) => candidate.metric.startsWith('delegations completed'))!;
    expect(completed.unit).toBe(`of ${completed.value}`);
    expect(completed.value).toBe(22 + 2 + 22 + 22); // warm-up burst, then solo, burst and burst in one tenant
    for (const setting of ['solo', 'burst', 'burst, one tenant']) expect(figure(result, `quiet tenant, ${setting}: added latency`)).toBeGreaterThan(0);
    expect(figure(result, 'quiet tenant p95 added latency ratio, burst / solo')).toBeGreaterThan(0);
    expect(figure(result, 'quiet tenant p95 added latency ratio, burst in one tenant')).toBeGreaterThan(0);
  }, 300_000);

  it('footprint: bytes per record and RSS are positive', async () => {
    const result = await footprint(STREAMS_SCALE);
    expectWellFormed(result);
    expect(figure(result, 'journal keys per finished record')).toBeGreaterThan(0);
    expect(figure(result, 'worker RSS with')).toBeGreaterThan(0);
  }, 300_000);

  it('peers: every side completes every delegation; the crash check settles every delegation of Restate and durable-a2a without duplicates', async () => {
    // Restate only where its binary is installed; the process environment is restored afterwards.
    const sides = SIDE_NAMES.filter((name) => name !== 'restate' || restateServerBinary() !== undefined);
    const knobs = { PEERS_SIDES: sides.join(','), PEERS_N: '20', PEERS_C: '5', PEERS_WORK_MS: '0', PEERS_ROUNDS: '1', PEERS_WARMUP: '5', PEERS_CRASH_COUNT: '5', PEERS_CRASH_WORK_MS: '1000', PEERS_CRASH_TIMEOUT_MS: '90000' };
    const saved = Object.fromEntries(Object.keys(knobs).map((name) => [name, process.env[name]]));
    Object.assign(process.env, knobs);
    let result: BenchResult;
    try {
      result = await peers(1);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expectWellFormed(result);
    for (const side of sides) {
      expect(figure(result, `WORK_MS=0, C=5: ${side} completed`)).toBe(20);
      expect(figure(result, `WORK_MS=0, C=5: ${side} delegations/s`)).toBeGreaterThan(0);
      expect(figure(result, `WORK_MS=0, C=5: ${side} CPU per delegation`)).toBeGreaterThan(0);
    }
    // Redis (or restate-server) does work for every durable side; the bare client has no store.
    expect(figure(result, 'WORK_MS=0, C=5: durable-separate engine CPU per delegation')).toBeGreaterThan(0);
    expect(figure(result, 'WORK_MS=0, C=5: bare engine CPU per delegation')).toBe(0);
    // Crash check: the agent saw every delegation; durable-a2a resumes without sending again. Restate settles every
    // one, but its `ctx.run` is at least once: a send whose result the killed endpoint had not yet journaled runs again
    // (seen once in a CI run: 1 of 5), so its duplicates are counted, not asserted; so are the naive worker's (sent again
    // after BullMQ's 30 s lock).
    const crashed = sides.filter((side) => side === 'naive' || side === 'restate' || side === 'durable-separate');
    for (const side of crashed) expect(figure(result, `crash ${side}: executions at the agent`), side).toBeGreaterThanOrEqual(5);
    for (const side of crashed.filter((name) => name !== 'naive')) expect(figure(result, `crash ${side}: settled`), side).toBe(5);
    if (crashed.includes('durable-separate')) {
      expect(figure(result, 'crash durable-separate: duplicated delegations')).toBe(0);
      expect(figure(result, 'crash durable-separate: executions at the agent')).toBe(5);
    }
    expect(result.tables?.some((table) => table.includes('| durable-separate |'))).toBe(true);
    expect(result.tables?.at(-1)).toMatch(/PASS|FAIL/);
  }, 600_000);
});
