/**
 * `pnpm bench peers`: durable-a2a against what a user would pick instead, on the same @a2a-js/sdk agent (own
 * process, WORK_MS of work per task, counting executions per delegation): the bare a2a-js client (no
 * durability), a naive BullMQ queue + worker calling the a2a-js client, Restate (restate-server + a service
 * whose send and follow are each a `ctx.run`), and durable-a2a (producer + fleet in one process; producer and a
 * separate worker, as deployed; the same with Redis `appendfsync always`). Each side's processes are its own
 * (bench/peers/sides.ts); while one side runs the others are SIGSTOPped. Per setting (WORK_MS × C): R rounds of
 * N delegations, the order of the sides rotated every round, after one untimed warm-up round per side.
 * CPU of every process of a side from /proc/<pid>/stat, per delegation. Then the crash check per durable side.
 *
 * Knobs (env; defaults at BENCH_SCALE=1): PEERS_SIDES (all; restate only when its binary is installed),
 * PEERS_N (2000 × scale), PEERS_C (50,200), PEERS_WORK_MS (50,0), PEERS_ROUNDS (3), PEERS_WARMUP (min(100, N)),
 * PEERS_CRASH (1; 0 skips the crash check), PEERS_CRASH_COUNT (50), PEERS_CRASH_WORK_MS (3000),
 * PEERS_CRASH_TIMEOUT_MS (120000), PEERS_TARGET_SIDE (durable-separate), PEERS_FREEZE_IDLE (1), PEERS_CPU_PROF (a directory:
 * a V8 CPU profile of every Node process of every side, written when the side stops; default none), PEERS_CPU_PROF_INTERVAL_US
 * (the profiles' sampling interval; default V8's, 1000), PEERS_BUILT (1: the durable sides' processes load the durable-a2a
 * packages from their build with plain node, as deployed, after `pnpm build`: the worker is packages/workers/dist/main.js,
 * as the runtime image runs it, the producer process its bench entry with @durable-a2a/producer and shared from dist;
 * 0 runs every durable-a2a package from source through tsx; PEERS_WORKER_BUILT, its name before it covered the producer,
 * is read when PEERS_BUILT is not set). DA2A_* variables
 * are passed to the durable-a2a worker processes (e.g. DA2A_LOCK_DURATION_MS).
 */
import { loadavg } from 'node:os';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { round, scaled, sleep, type BenchResult, type Figure } from './common.ts';
import type { Executions } from './processes/agent.ts';
import { spawnBenchChild, type BenchChild } from './processes/ipc.ts';
import { processCpuMicros, totalCpuMicros } from './peers/cpu.ts';
import { restateServerBinary, restateServerVersion } from './peers/restate-server.ts';
import { CRASH_SIDES, SIDE_NAMES, startSide, type Side, type SideName, type SideOptions } from './peers/sides.ts';
import { cpuMsOf, crashCell, engineMsOf, median, rateOf, settingLabel, settingTable, targets, targetsTable, type CrashResult, type MeasuredRound, type SettingResult } from './peers/table.ts';

interface AgentReady {
  cardUrl: string;
  baseUrl: string;
}

const numberList = z.string().transform((text, context) => {
  const values = text.split(',').map((item) => Number(item.trim()));
  if (values.some((value) => !Number.isInteger(value) || value < 0)) context.addIssue({ code: 'custom', message: `a comma-separated list of whole numbers, got ${text}` });
  return values;
});
const positive = z.coerce.number().int().positive();

/** The settings, parsed once from the environment. */
function settingsFrom(environment: NodeJS.ProcessEnv, scale: number) {
  const parsed = z
    .object({
      PEERS_SIDES: z
        .string()
        .transform((text) => text.split(',').map((name) => name.trim()).filter(Boolean))
        .pipe(z.array(z.enum(SIDE_NAMES)).min(1))
        .optional(),
      PEERS_N: positive.default(scaled(2000, scale, 10)),
      PEERS_C: numberList.default([50, 200]),
      PEERS_WORK_MS: numberList.default([50, 0]),
      PEERS_ROUNDS: positive.default(3),
      PEERS_WARMUP: z.coerce.number().int().min(0).optional(),
      PEERS_CRASH: z.enum(['0', '1']).default('1'),
      PEERS_CRASH_COUNT: positive.default(50),
      PEERS_CRASH_WORK_MS: positive.default(3_000),
      PEERS_CRASH_TIMEOUT_MS: positive.default(120_000),
      PEERS_TARGET_SIDE: z.enum(SIDE_NAMES).default('durable-separate'),
      PEERS_FREEZE_IDLE: z.enum(['0', '1']).default('1'),
      PEERS_CPU_PROF: z.string().min(1).optional(),
      PEERS_CPU_PROF_INTERVAL_US: positive.optional(),
      PEERS_BUILT: z.enum(['0', '1']).optional(),
      PEERS_WORKER_BUILT: z.enum(['0', '1']).optional(),
    })
    .parse(environment);
  const restateInstalled = restateServerBinary() !== undefined;
  const sides = (parsed.PEERS_SIDES ?? SIDE_NAMES.filter((name) => name !== 'restate' || restateInstalled)) as SideName[];
  return {
    ...parsed,
    sides,
    warmup: parsed.PEERS_WARMUP ?? Math.min(100, parsed.PEERS_N),
    crash: parsed.PEERS_CRASH === '1',
    built: (parsed.PEERS_BUILT ?? parsed.PEERS_WORKER_BUILT ?? '1') === '1',
    freezeIdle: parsed.PEERS_FREEZE_IDLE === '1',
    restateInstalled,
    workerEnvironment: Object.fromEntries(Object.entries(environment).filter((entry): entry is [string, string] => entry[0].startsWith('DA2A_') && entry[1] !== undefined)),
  };
}

type Settings = ReturnType<typeof settingsFrom>;

const load1 = () => round(loadavg()[0]!, 2);
const DURABLE_SIDES: readonly SideName[] = ['durable-inprocess', 'durable-separate', 'durable-fsync'];

/** One measured round of `side`: its own processes' CPU over the round, read from /proc, in all and by role. */
async function measuredRound(side: Side, input: Parameters<Side['round']>[0]): Promise<MeasuredRound> {
  const pids = side.pids();
  const engine = side.enginePids();
  const [cpuBefore, engineBefore, rolesBefore] = [totalCpuMicros(pids), totalCpuMicros(engine), pids.map(processCpuMicros)];
  const { completed, elapsedMs } = await side.round(input);
  const cpuMicrosByRole = Object.fromEntries(pids.map((pid, index) => [side.roles[index] ?? String(pid), processCpuMicros(pid) - rolesBefore[index]!]));
  return { completed, elapsedMs, cpuMicros: totalCpuMicros(pids) - cpuBefore, engineCpuMicros: totalCpuMicros(engine) - engineBefore, cpuMicrosByRole };
}

/** `client 0.9, worker 1.1, engine 0.6` (ms per delegation completed). */
const roleCpuText = (measured: MeasuredRound): string =>
  Object.entries(measured.cpuMicrosByRole ?? {})
    .map(([role, micros]) => `${role} ${round(micros / 1000 / Math.max(1, measured.completed), 3)}`)
    .join(', ');

async function runSetting(settings: Settings, agent: AgentReady, workMs: number, concurrency: number, notes: string[]): Promise<SettingResult> {
  const result: SettingResult = { workMs, concurrency, count: settings.PEERS_N, rounds: new Map(), loadAtStart: load1(), loadAtEnd: 0 };
  const sides: Side[] = [];
  const options: SideOptions = { concurrency, workerEnvironment: settings.workerEnvironment, built: settings.built, ...(settings.PEERS_CPU_PROF ? { profileDirectory: settings.PEERS_CPU_PROF } : {}), ...(settings.PEERS_CPU_PROF_INTERVAL_US ? { profileIntervalUs: settings.PEERS_CPU_PROF_INTERVAL_US } : {}) };
  try {
    for (const name of settings.sides) {
      try {
        const side = await startSide(name, options);
        sides.push(side);
        if (settings.freezeIdle) side.pause();
      } catch (error) {
        notes.push(`${settingLabel({ workMs, concurrency })}: ${name} did not start: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const input = (tag: string, count: number) => ({ ...agent, count, concurrency, tag: `w${workMs}-c${concurrency}-${tag}` });
    const inTurn = async <T>(side: Side, work: () => Promise<T>): Promise<T> => {
      if (settings.freezeIdle) side.resume();
      try {
        return await work();
      } finally {
        if (settings.freezeIdle) side.pause();
      }
    };
    // A side whose round fails (a process of it died) is noted and left out of the setting's remaining rounds.
    const failed = new Set<Side>();
    const attempt = async (side: Side, what: string, work: () => Promise<void>) => {
      try {
        await inTurn(side, work);
      } catch (error) {
        failed.add(side);
        notes.push(`${settingLabel({ workMs, concurrency })}: ${side.name} ${what} failed, left out of the remaining rounds: ${error instanceof Error ? error.message : String(error)}`);
      }
    };
    if (settings.warmup > 0) for (const side of sides) await attempt(side, 'warm-up', async () => void (await side.round(input('warm', settings.warmup))));
    for (let index = 0; index < settings.PEERS_ROUNDS; index++) {
      const order = sides.map((_, position) => sides[(position + index) % sides.length]!);
      for (const side of order.filter((candidate) => !failed.has(candidate))) {
        await attempt(side, `round ${index + 1}`, async () => {
          const measured = await measuredRound(side, input(`r${index}`, settings.PEERS_N));
          result.rounds.set(side.name, [...(result.rounds.get(side.name) ?? []), measured]);
          console.log(`  ${settingLabel(result)} round ${index + 1} ${side.name}: ${round(rateOf(measured), 1)}/s, ${round(cpuMsOf(measured), 3)} ms CPU (${roleCpuText(measured)}), ${round(engineMsOf(measured), 3)} ms engine`);
        });
      }
    }
  } finally {
    for (const side of sides) await side.stop();
  }
  // Rows in the order the sides were asked for.
  result.rounds = new Map(settings.sides.filter((name) => result.rounds.has(name)).map((name) => [name, result.rounds.get(name)!]));
  result.loadAtEnd = load1();
  return result;
}

/** Polls `check` every 100 ms until true or `timeoutMs` passes; returns whether it became true. */
async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(100);
  }
  return false;
}

async function crashCheck(settings: Settings, name: SideName, agentChild: BenchChild<AgentReady>): Promise<CrashResult> {
  const agent = await agentChild.ready;
  const count = settings.PEERS_CRASH_COUNT;
  const side = await startSide(name, { concurrency: Math.max(count, 50), workerEnvironment: settings.workerEnvironment, built: settings.built });
  const tag = `crash-${name}`;
  try {
    await side.launch({ ...agent, count, concurrency: count, tag });
    const executions = () => agentChild.call<Executions>('executions', `${tag}-`);
    await until(async () => (await executions()).delegations >= count, 60_000);
    const receivedAtKill = (await executions()).delegations;
    const killedAt = Date.now();
    await side.killAndRestart!();
    const outcome = await side.launched(tag, settings.PEERS_CRASH_TIMEOUT_MS);
    const waitedMs = Date.now() - killedAt;
    const seen = await executions();
    return {
      side: name,
      inFlight: count,
      receivedAtKill,
      settled: outcome.settled,
      completed: outcome.completed,
      duplicatedDelegations: seen.duplicatedDelegations,
      duplicatedMessageIds: seen.duplicatedMessageIds,
      executions: seen.executions,
      settledAfterMs: outcome.settled === count ? Math.max(0, outcome.lastSettledAt - killedAt) : undefined,
      waitedMs,
    };
  } finally {
    await side.stop();
  }
}

const packageVersion = (name: string): string => {
  try {
    return (JSON.parse(readFileSync(new URL(`../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'not installed';
  }
};

export async function run(scale: number): Promise<BenchResult> {
  const settings = settingsFrom(process.env, scale);
  const notes: string[] = [];
  const figures: Figure[] = [];
  const results: SettingResult[] = [];
  const crashes = new Map<SideName, CrashResult>();
  const agents = new Map<number, BenchChild<AgentReady>>();
  const crashSides = settings.crash ? settings.sides.filter((name) => CRASH_SIDES.includes(name)) : [];
  try {
    for (const workMs of settings.PEERS_WORK_MS) agents.set(workMs, spawnBenchChild<AgentReady>('agent', { BENCH_AGENT_BEHAVIOUR: `completes:${workMs}` }));
    for (const workMs of settings.PEERS_WORK_MS) {
      const agent = await agents.get(workMs)!.ready;
      for (const concurrency of settings.PEERS_C) results.push(await runSetting(settings, agent, workMs, concurrency, notes));
    }
    if (crashSides.length > 0) {
      const crashAgent = spawnBenchChild<AgentReady>('agent', { BENCH_AGENT_BEHAVIOUR: `completes:${settings.PEERS_CRASH_WORK_MS}` });
      try {
        for (const name of crashSides) {
          try {
            const crash = await crashCheck(settings, name, crashAgent);
            crashes.set(name, crash);
            console.log(`  crash check ${name}: ${crashCell(crash)} (${crash.executions} executions, agent had ${crash.receivedAtKill} at the kill)`);
          } catch (error) {
            notes.push(`crash check ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
          }
        }
      } finally {
        await crashAgent.stop();
      }
    }
  } finally {
    await Promise.all([...agents.values()].map((agent) => agent.stop()));
  }
  for (const setting of results) {
    const label = settingLabel(setting);
    for (const [side, rounds] of setting.rounds) {
      figures.push(
        { metric: `${label}: ${side} delegations/s`, value: round(median(rounds.map(rateOf)), 1), unit: '1/s' },
        { metric: `${label}: ${side} CPU per delegation`, value: round(median(rounds.map(cpuMsOf)), 3), unit: 'ms' },
        { metric: `${label}: ${side} engine CPU per delegation`, value: round(median(rounds.map(engineMsOf)), 3), unit: 'ms' },
        { metric: `${label}: ${side} completed`, value: rounds.reduce((sum, measured) => sum + measured.completed, 0), unit: `of ${rounds.length * setting.count}` },
      );
    }
  }
  for (const crash of crashes.values()) {
    figures.push(
      { metric: `crash ${crash.side}: settled`, value: crash.settled, unit: `of ${crash.inFlight}` },
      { metric: `crash ${crash.side}: duplicated delegations`, value: crash.duplicatedDelegations, unit: `of ${crash.inFlight}` },
      { metric: `crash ${crash.side}: executions at the agent`, value: crash.executions, unit: `for ${crash.inFlight} delegations` },
      { metric: `crash ${crash.side}: seconds from SIGKILL to all settled`, value: crash.settledAfterMs === undefined ? round(crash.waitedMs / 1000, 2) : round(crash.settledAfterMs / 1000, 2), unit: crash.settledAfterMs === undefined ? 's (not all settled: waited this long)' : 's' },
    );
  }
  const checks = targets(settings.PEERS_TARGET_SIDE, results, crashes);
  figures.push({ metric: 'targets passed', value: checks.filter((check) => check.pass === true).length, unit: `of ${checks.length} (${checks.filter((check) => check.pass === undefined).length} not measured)` });
  const crashTable = [
    '| side | killed | in flight (agent had at the kill) | settled | duplicated delegations | executions at the agent | seconds from SIGKILL to all settled |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...[...crashes.values()].map(
      (crash) =>
        `| ${crash.side} | ${crash.side === 'restate' ? 'service endpoint' : 'worker'} | ${crash.inFlight} (${crash.receivedAtKill}) | ${crash.settled} | ${crash.duplicatedDelegations} | ${crash.executions} | ${crash.settledAfterMs === undefined ? `not all within ${round(crash.waitedMs / 1000, 1)}` : round(crash.settledAfterMs / 1000, 2)} |`,
    ),
  ].join('\n');
  return {
    name: 'peers',
    title: 'durable-a2a against the bare a2a-js client, a naive BullMQ worker and Restate',
    figures,
    tables: [
      ...results.map((setting) => settingTable(setting, crashes, DURABLE_SIDES)),
      ...(crashes.size > 0 ? [`#### Crash check (${settings.PEERS_CRASH_COUNT} delegations, agent works ${settings.PEERS_CRASH_WORK_MS} ms)\n\n${crashTable}`] : []),
      `#### Targets (${settings.PEERS_TARGET_SIDE}, the deployed row)\n\n${targetsTable(checks)}`,
    ],
    notes: [
      `Versions: restate-server ${settings.restateInstalled ? restateServerVersion() : 'not installed'}, @restatedev/restate-sdk ${packageVersion('@restatedev/restate-sdk')}, bullmq ${packageVersion('bullmq')}, @a2a-js/sdk ${packageVersion('@a2a-js/sdk')}.`,
      `Sides: ${settings.sides.join(', ')}; ${settings.PEERS_ROUNDS} rounds of ${settings.PEERS_N} delegations per side per setting, the order rotated every round, after a warm-up round of ${settings.warmup}; idle sides ${settings.freezeIdle ? 'SIGSTOPped' : 'left running'} while another side runs.`,
      'Durability: naive and durable-a2a rows use redis-server with AOF `appendfsync everysec` (durable-a2a\'s deployed default: up to 1 s of acknowledged writes can be lost on a machine crash); durable-fsync uses `appendfsync always`; Restate runs its default, every write fsynced (rocksdb-disable-wal-fsync = false). Like for like on durability: durable-fsync against restate.',
      'CPU per delegation: user + system time from /proc/<pid>/stat of every process of the side (client, worker or service endpoint, redis-server or restate-server) over the round ÷ delegations completed; Redis/engine: redis-server or restate-server alone. The agent\'s CPU is in no side.',
      `bare: sendMessage(returnImmediately) + resubscribe (GetTask when refused), C in flight. naive: Queue.add (job id = key, 3 attempts, exponential backoff 1 s) + waitUntilFinished(QueueEvents), worker concurrency C, BullMQ defaults (30 s lock). restate: ingress /Peers/delegate/send (idempotency key) + /restate/invocation/<id>/attach; handler = ctx.run(send) then ctx.run(follow), HTTP/2 endpoint. durable-inprocess: delegate() with C unsettled at most, fleet in-process. durable-separate and durable-fsync: delegate() + waitFor() in a producer process (${settings.built ? '@durable-a2a/producer from its build, plain node' : '@durable-a2a/producer from source through tsx'}), a worker process (${settings.built ? 'dist/main.js with plain node, as the runtime image runs it' : 'src/main.ts through tsx'}, send and follow concurrency C, production timings, subscribe limit out of the way).`,
      `Crash check: ${settings.PEERS_CRASH_COUNT} delegations started at once on an agent that works ${settings.PEERS_CRASH_WORK_MS} ms; once the agent has received all (60 s at most), the process holding them is SIGKILLed and started again (naive: the BullMQ worker; durable-separate: the durable-a2a worker; restate: the service endpoint, whose restate-server keeps the journal as Redis does for the others). Settled after = SIGKILL → last delegation settled at the client, at most ${settings.PEERS_CRASH_TIMEOUT_MS} ms; includes the agent's remaining work. Duplicated = delegations the agent executed more than once (counted per message text; per messageId as well).`,
      `Targets are checked on ${settings.PEERS_TARGET_SIDE}; a PASS/FAIL does not fail the run.`,
      ...notes,
    ],
  };
}
