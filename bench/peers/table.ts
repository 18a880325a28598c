/**
 * The peers benchmark's report: one markdown table per setting (side, delegations/s, CPU per delegation of all
 * the side's processes, of its store alone, crash check, ratios of durable-a2a against naive and bare), a crash
 * table, and the targets checked PASS / FAIL. Medians over rounds; ratios are medians of per-round ratios
 * (round i of one side against round i of the other, run back to back).
 */
import { round } from '../common.ts';
import { SIDE_DURABILITY, type SideName } from './sides.ts';

/** One side's measured round. */
export interface MeasuredRound {
  completed: number;
  elapsedMs: number;
  /** CPU µs of all the side's processes over the round. */
  cpuMicros: number;
  /** CPU µs of its redis-server or restate-server over the round. */
  engineCpuMicros: number;
  /** CPU µs of each process over the round, by its role (`client`, `worker`, `engine`, …). */
  cpuMicrosByRole?: Record<string, number>;
}

export interface SettingResult {
  workMs: number;
  concurrency: number;
  count: number;
  rounds: Map<SideName, MeasuredRound[]>;
  loadAtStart: number;
  loadAtEnd: number;
}

export interface CrashResult {
  side: SideName;
  inFlight: number;
  /** Delegations the agent had received when the process was killed. */
  receivedAtKill: number;
  settled: number;
  completed: number;
  duplicatedDelegations: number;
  duplicatedMessageIds: number;
  executions: number;
  /** From the SIGKILL to the last delegation settled; undefined when not all settled within the wait. */
  settledAfterMs: number | undefined;
  waitedMs: number;
}

export const rateOf = (measured: MeasuredRound) => (measured.completed / measured.elapsedMs) * 1000;
export const cpuMsOf = (measured: MeasuredRound) => measured.cpuMicros / 1000 / Math.max(1, measured.completed);
export const engineMsOf = (measured: MeasuredRound) => measured.engineCpuMicros / 1000 / Math.max(1, measured.completed);

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Median of per-round ratios `metric(a) / metric(b)`, rounds paired by index; NaN when either side is missing. */
export function pairedRatio(a: readonly MeasuredRound[] | undefined, b: readonly MeasuredRound[] | undefined, metric: (measured: MeasuredRound) => number): number {
  if (!a || !b) return Number.NaN;
  return median(a.slice(0, b.length).map((measured, index) => metric(measured) / metric(b[index]!)));
}

const show = (value: number, digits = 2) => (Number.isFinite(value) ? String(round(value, digits)) : 'n/a');

export function crashCell(crash: CrashResult | undefined): string {
  if (!crash) return '—';
  const settled = crash.settledAfterMs === undefined ? `${crash.settled}/${crash.inFlight} settled in ${show(crash.waitedMs / 1000, 1)} s` : `settled after ${show(crash.settledAfterMs / 1000, 2)} s`;
  return `${crash.duplicatedDelegations}/${crash.inFlight} duplicated, ${settled}`;
}

export const settingLabel = (setting: Pick<SettingResult, 'workMs' | 'concurrency'>) => `WORK_MS=${setting.workMs}, C=${setting.concurrency}`;

/** The table of one setting; `durableSides` get ratio columns against naive and bare. */
export function settingTable(setting: SettingResult, crashes: ReadonlyMap<SideName, CrashResult>, durableSides: readonly SideName[]): string {
  const lines = [
    `#### ${settingLabel(setting)}, N=${setting.count} per round, ${Math.max(0, ...[...setting.rounds.values()].map((rounds) => rounds.length))} rounds (load average ${setting.loadAtStart} → ${setting.loadAtEnd})`,
    '',
    '| side | durability | delegations/s | CPU ms per delegation (all its processes) | Redis/engine CPU ms per delegation | completed | crash check: duplicates, settled after | × naive (throughput / CPU) | × bare throughput |',
    '| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |',
  ];
  const naive = setting.rounds.get('naive');
  const bare = setting.rounds.get('bare');
  for (const [side, rounds] of setting.rounds) {
    const durable = durableSides.includes(side);
    const versusNaive = durable && naive ? `${show(pairedRatio(rounds, naive, rateOf))} / ${show(pairedRatio(rounds, naive, cpuMsOf))}` : '';
    const versusBare = durable && bare ? show(pairedRatio(rounds, bare, rateOf)) : '';
    const completed = rounds.reduce((sum, measured) => sum + measured.completed, 0);
    lines.push(
      `| ${side} | ${SIDE_DURABILITY[side]} | ${show(median(rounds.map(rateOf)), 1)} | ${show(median(rounds.map(cpuMsOf)), 3)} | ${side === 'bare' ? '—' : show(median(rounds.map(engineMsOf)), 3)} | ${completed}/${rounds.length * setting.count} | ${crashCell(crashes.get(side))} | ${versusNaive} | ${versusBare} |`,
    );
  }
  return lines.join('\n');
}

export interface Target {
  name: string;
  value: string;
  pass: boolean | undefined;
}

/** The targets for `side` (the deployed durable-a2a row); undefined `pass` = not measured in this run. */
export function targets(side: SideName, settings: readonly SettingResult[], crashes: ReadonlyMap<SideName, CrashResult>): Target[] {
  const checks: Target[] = [];
  const check = (name: string, value: number, pass: (value: number) => boolean) =>
    checks.push({ name, value: show(value, 3), pass: Number.isFinite(value) ? pass(value) : undefined });
  for (const setting of settings) {
    const label = settingLabel(setting);
    const ours = setting.rounds.get(side);
    check(`${label}: ${side} throughput ÷ naive ≥ 1.0`, pairedRatio(ours, setting.rounds.get('naive'), rateOf), (value) => value >= 1);
    check(`${label}: ${side} CPU ÷ naive ≤ 1.0`, pairedRatio(ours, setting.rounds.get('naive'), cpuMsOf), (value) => value <= 1);
    check(`${label}: ${side} throughput ÷ Restate > 1.0`, pairedRatio(ours, setting.rounds.get('restate'), rateOf), (value) => value > 1);
    check(`${label}: ${side} CPU ÷ Restate < 1.0`, pairedRatio(ours, setting.rounds.get('restate'), cpuMsOf), (value) => value < 1);
    if (setting.concurrency === 50) check(`${label}: ${side} throughput ÷ bare ≥ 0.67`, pairedRatio(ours, setting.rounds.get('bare'), rateOf), (value) => value >= 0.67);
  }
  const crash = crashes.get(side);
  const settleTarget = `crash check: ${side} all settled, seconds after the SIGKILL ≤ 5`;
  if (crash && crash.settledAfterMs === undefined) checks.push({ name: settleTarget, value: `${crash.settled}/${crash.inFlight} in ${show(crash.waitedMs / 1000, 1)} s`, pass: false });
  else check(settleTarget, crash?.settledAfterMs === undefined ? Number.NaN : crash.settledAfterMs / 1000, (value) => value <= 5);
  check(`crash check: ${side} duplicated delegations = 0`, crash ? crash.duplicatedDelegations : Number.NaN, (value) => value === 0);
  return checks;
}

export function targetsTable(checks: readonly Target[]): string {
  const verdict = (pass: boolean | undefined) => (pass === undefined ? 'n/a (not run)' : pass ? 'PASS' : 'FAIL');
  return ['| target | value | verdict |', '| --- | ---: | --- |', ...checks.map((check) => `| ${check.name} | ${check.value} | ${verdict(check.pass)} |`)].join('\n');
}
