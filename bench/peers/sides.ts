/**
 * The sides of the peers benchmark, each a set of processes of its own started by `startSide` and stopped by
 * `stop()`: the client that submits and awaits delegations, the processes that do the work, and the store.
 *
 * - bare: the @a2a-js/sdk client alone (bench/processes/side.ts, BENCH_SIDE=bare).
 * - naive: BullMQ + the a2a-js client: a client process (Queue.add + waitUntilFinished), a worker process
 *   (bench/processes/naive-worker.ts), its own redis-server (AOF, appendfsync everysec).
 * - restate: restate-server (fsync on every write, its default), a service endpoint process
 *   (bench/processes/restate-service.ts, HTTP/2), a client process (ingress /send then attach).
 * - durable-inprocess: producer + fleet in one process (bench/processes/side.ts, BENCH_SIDE=durable) and its
 *   own redis-server (AOF, appendfsync everysec: the deployed default).
 * - durable-separate: a producer process (delegate + waitFor) and a worker process (packages/workers main.ts,
 *   production timings), redis-server AOF everysec. With `built` (PEERS_BUILT=1, the default of bench/peers.ts) both
 *   load the packages' build with plain node, as deployed; without it, their sources through tsx.
 * - durable-fsync: durable-separate with redis-server `appendfsync always` (every write fsynced, as Restate).
 *
 * The crash check kills and restarts the process that holds the delegations in flight: the naive worker, the
 * durable-a2a worker, the Restate service endpoint (restate-server holds Restate's journal, as Redis does for
 * the other two; the endpoint runs the handler, as the workers run the jobs).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServerHandle } from '@durable-a2a/testing';
import { BENCH_STREAM_IDLE_TIMEOUT_MS, info } from '../common.ts';
import { spawnBenchChild, type BenchChild } from '../processes/ipc.ts';
import type { RoundInput } from '../processes/side.ts';
import { killHard, killOnExit, signalAll, stopGracefully } from './processes.ts';
import { startRestateServer, type RestateServer } from './restate-server.ts';

export const SIDE_NAMES = ['bare', 'naive', 'restate', 'durable-inprocess', 'durable-separate', 'durable-fsync'] as const;
export type SideName = (typeof SIDE_NAMES)[number];

/** What each side's store promises on a machine crash, printed beside its figures. */
export const SIDE_DURABILITY: Record<SideName, string> = {
  bare: 'none',
  naive: 'Redis AOF everysec',
  restate: 'fsync every write (Restate default)',
  'durable-inprocess': 'Redis AOF everysec (deployed default)',
  'durable-separate': 'Redis AOF everysec (deployed default)',
  'durable-fsync': 'Redis AOF always (fsync every write)',
};

/** Sides with a crash check: a worker (or endpoint) process that can be killed apart from the client. */
export const CRASH_SIDES: readonly SideName[] = ['naive', 'restate', 'durable-separate'];

export interface SideRound {
  completed: number;
  elapsedMs: number;
}

export interface LaunchOutcome {
  settled: number;
  completed: number;
  /** Epoch ms of the last settle (0: none settled). */
  lastSettledAt: number;
}

export interface Side {
  name: SideName;
  /** Every process of the side: client, workers, redis-server or restate-server. */
  pids(): number[];
  /** The role of each process of `pids()`, in the same order (`client`, `worker`, `engine`, …). */
  roles: readonly string[];
  /** The store's process: redis-server or restate-server (none for bare). */
  enginePids(): number[];
  round(input: RoundInput): Promise<SideRound>;
  /** Starts `count` delegations at once (crash check); they settle in the background. */
  launch(input: RoundInput): Promise<void>;
  /** Waits for the launched delegations of `tag`, at most `timeoutMs`. */
  launched(tag: string, timeoutMs: number): Promise<LaunchOutcome>;
  /** SIGKILLs the process holding the delegations in flight and starts it again; resolves once it is ready. */
  killAndRestart?: () => Promise<void>;
  /** SIGSTOP / SIGCONT every process, so an idle side takes no CPU while another is measured. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export interface SideOptions {
  /** Worker concurrency (send and follow, or BullMQ's), at least the client's. */
  concurrency: number;
  /** More env for durable-a2a worker processes (the caller's DA2A_* settings). */
  workerEnvironment: Record<string, string>;
  /**
   * Write a V8 CPU profile of every Node process of the side, each into `<directory>/<side>-<role>/` when the process
   * exits (PEERS_CPU_PROF). Default none.
   */
  profileDirectory?: string;
  /** The profiles' sampling interval in µs (PEERS_CPU_PROF_INTERVAL_US). Default V8's (1000). */
  profileIntervalUs?: number;
  /**
   * Run the durable sides' processes on the packages' build (`pnpm build` first), as deployed (PEERS_BUILT=1): the
   * worker is `packages/workers/dist/main.js` with plain node, as the runtime image's `bin/durable-a2a-workers.mjs`
   * runs it; the producer (client) process is its bench entry with plain node, `@durable-a2a/producer` and `shared`
   * resolved to their `dist/`. Default false: every durable-a2a package from source through tsx.
   */
  built?: boolean;
}

/** `--cpu-prof` arguments for a side's Node process of `role`; none without `options.profileDirectory`. */
function profileArguments(options: SideOptions, side: SideName, role: string): string[] {
  if (!options.profileDirectory) return [];
  const interval = options.profileIntervalUs ? [`--cpu-prof-interval=${options.profileIntervalUs}`] : [];
  return ['--cpu-prof', `--cpu-prof-dir=${options.profileDirectory}/${side}-${role}`, ...interval];
}

const WORKER_MAIN = fileURLToPath(new URL('../../packages/workers/src/main.ts', import.meta.url));
const BUILT_WORKER_MAIN = fileURLToPath(new URL('../../packages/workers/dist/main.js', import.meta.url));
const SOURCE_EXEC_ARGV = ['--conditions=@durable-a2a/source', '--import', 'tsx'];
const UNTHROTTLED_SUBSCRIBE = '1000000/1000';

/** The builds a durable side loads with `options.built`: every package its producer and worker processes import. */
const BUILT_ENTRIES = ['a2a', 'shared', 'producer', 'workers'].map((name) => fileURLToPath(new URL(`../../packages/${name}/dist/index.js`, import.meta.url)));

/** Throws a clear error when a build the durable sides load with `options.built` is missing. */
function checkBuilt(options: SideOptions): void {
  if (!options.built) return;
  const missing = [BUILT_WORKER_MAIN, ...BUILT_ENTRIES].filter((file) => !existsSync(file));
  if (missing.length > 0) throw new Error(`${missing.join(', ')} missing: run \`pnpm build\` first, or set PEERS_BUILT=0 to run the durable-a2a packages from source`);
}

/**
 * A durable-a2a worker process (packages/workers main.ts, or its build with `options.built`) with production
 * timings; resolves when ready.
 */
async function spawnDurableWorker(redisUrl: string, prefix: string, options: SideOptions, side: SideName): Promise<ChildProcess> {
  const concurrency = String(options.concurrency);
  checkBuilt(options);
  const child = fork(options.built ? BUILT_WORKER_MAIN : WORKER_MAIN, [], {
    execArgv: [...(options.built ? [] : SOURCE_EXEC_ARGV), ...profileArguments(options, side, 'worker')],
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'silent',
      REDIS_URL: redisUrl,
      DA2A_PREFIX: prefix,
      DA2A_ALLOW_LOOPBACK: 'true',
      DA2A_CONCURRENCY: `send=${concurrency},follow=${concurrency}`,
      // One agent holds every stream here: its share is the whole concurrency (default: half, 90% at most).
      DA2A_FOLLOW_SLOTS_PER_AGENT: concurrency,
      DA2A_SEND_SLOTS_PER_AGENT: concurrency,
      DA2A_SUBSCRIBE_RATE_LIMIT: UNTHROTTLED_SUBSCRIBE,
      DA2A_STREAM_IDLE_TIMEOUT_MS: String(BENCH_STREAM_IDLE_TIMEOUT_MS),
      ...options.workerEnvironment,
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // Its own process group, as every side process (spawnBenchChild's `detached`); killed when this process exits.
    detached: true,
  });
  killOnExit(child);
  await new Promise<void>((resolve, reject) => {
    child.on('message', (message: { ready?: boolean }) => message.ready && resolve());
    child.once('exit', (code, signal) => reject(new Error(`durable-a2a worker exited before ready (code ${code}, signal ${signal})`)));
  });
  return child;
}

async function redisPid(redisServer: RedisServerHandle): Promise<number> {
  const redis = new Redis(redisServer.url);
  try {
    return Number((await info(redis, 'server')).get('process_id'));
  } finally {
    redis.disconnect();
  }
}

/**
 * A bench child in a process group of its own (it is SIGSTOPped while idle), killed when this process exits; `built`:
 * the durable-a2a packages from their build (spawnBenchChild's option), default false.
 */
function detachedChild<Ready>(entry: string, environment: Record<string, string>, execArgv: string[] = [], built = false): BenchChild<Ready> {
  const child = spawnBenchChild<Ready>(entry, environment, execArgv, { detached: true, built });
  killOnExit(child.child);
  return child;
}

/** A client child's calls, shared by every side whose client is bench/processes/peer-client.ts or side.ts. */
function clientCalls(client: BenchChild<unknown>) {
  return {
    round: (input: RoundInput) => client.call<SideRound>('round', input),
    launch: async (input: RoundInput) => void (await client.call('launch', input)),
    launched: (tag: string, timeoutMs: number) => client.call<LaunchOutcome>('launched', { tag, timeoutMs }),
  };
}

/** What every side has: its processes by role, a stop list run in reverse order. */
function assemble(name: SideName, parts: { pids: () => number[]; roles: readonly string[]; enginePids: () => number[]; client: BenchChild<unknown>; killAndRestart?: () => Promise<void>; stops: (() => Promise<void>)[] }): Side {
  return {
    name,
    pids: parts.pids,
    roles: parts.roles,
    enginePids: parts.enginePids,
    ...clientCalls(parts.client),
    ...(parts.killAndRestart ? { killAndRestart: parts.killAndRestart } : {}),
    pause: () => signalAll(parts.pids, 'SIGSTOP'),
    resume: () => signalAll(parts.pids, 'SIGCONT'),
    async stop() {
      signalAll(parts.pids, 'SIGCONT');
      for (const stop of [...parts.stops].reverse()) await stop().catch(() => undefined);
    },
  };
}

export async function startSide(name: SideName, options: SideOptions): Promise<Side> {
  const pidOf = (child: { pid?: number | undefined }) => child.pid ?? 0;
  const profiled = (role: string) => profileArguments(options, name, role);
  if (name === 'bare') {
    const client = detachedChild('side', { BENCH_SIDE: 'bare' }, profiled('client'));
    await client.ready;
    return assemble(name, { pids: () => [pidOf(client.child)], roles: ['client'], enginePids: () => [], client, stops: [() => client.stop()] });
  }
  if (name === 'restate') {
    const server: RestateServer = await startRestateServer();
    const stops: (() => Promise<void>)[] = [() => server.stop()];
    try {
      // The SDK logs every invocation at INFO; the other sides log nothing either.
      const startService = (port = 0) => detachedChild<{ port: number }>('restate-service', { PORT: String(port), RESTATE_LOGGING: 'ERROR' }, profiled('service'));
      let service = startService();
      stops.push(() => service.stop());
      const { port } = await service.ready;
      await server.register(`http://127.0.0.1:${port}`);
      const client = detachedChild('peer-client', { BENCH_PEER: 'restate', RESTATE_INGRESS_URL: server.ingressUrl }, profiled('client'));
      stops.push(() => client.stop());
      await client.ready;
      const killAndRestart = async () => {
        await killHard(service.child);
        service = startService(port);
        await service.ready;
      };
      return assemble(name, { pids: () => [pidOf(client.child), pidOf(service.child), server.pid], roles: ['client', 'service', 'engine'], enginePids: () => [server.pid], client, killAndRestart, stops });
    } catch (error) {
      for (const stop of stops.reverse()) await stop().catch(() => undefined);
      throw error;
    }
  }
  const redisServer = await startRedisServer({ appendOnly: true, appendFsync: name === 'durable-fsync' ? 'always' : 'everysec', detached: true });
  const engine = await redisPid(redisServer);
  const stops: (() => Promise<void>)[] = [() => redisServer.stop()];
  try {
    if (name === 'durable-inprocess') {
      checkBuilt(options);
      const client = detachedChild('side', { BENCH_SIDE: 'durable', REDIS_URL: redisServer.url, BENCH_PREFIX: 'peers' }, profiled('client'), options.built);
      stops.push(() => client.stop());
      await client.ready;
      return assemble(name, { pids: () => [pidOf(client.child), engine], roles: ['client', 'engine'], enginePids: () => [engine], client, stops });
    }
    if (name === 'naive') {
      const startWorker = () => detachedChild('naive-worker', { REDIS_URL: redisServer.url, NAIVE_CONCURRENCY: String(options.concurrency) }, profiled('worker'));
      let worker = startWorker();
      stops.push(() => worker.stop());
      await worker.ready;
      const client = detachedChild('peer-client', { BENCH_PEER: 'naive', REDIS_URL: redisServer.url }, profiled('client'));
      stops.push(() => client.stop());
      await client.ready;
      const killAndRestart = async () => {
        await killHard(worker.child);
        worker = startWorker();
        await worker.ready;
      };
      return assemble(name, { pids: () => [pidOf(client.child), pidOf(worker.child), engine], roles: ['client', 'worker', 'engine'], enginePids: () => [engine], client, killAndRestart, stops });
    }
    let worker = await spawnDurableWorker(redisServer.url, 'peers', options, name);
    stops.push(() => stopGracefully(worker));
    const client = detachedChild('peer-client', { BENCH_PEER: 'durable', REDIS_URL: redisServer.url, BENCH_PREFIX: 'peers' }, profiled('client'), options.built);
    stops.push(() => client.stop());
    await client.ready;
    const killAndRestart = async () => {
      await killHard(worker);
      worker = await spawnDurableWorker(redisServer.url, 'peers', options, name);
    };
    return assemble(name, { pids: () => [pidOf(client.child), pidOf(worker), engine], roles: ['client', 'worker', 'engine'], enginePids: () => [engine], client, killAndRestart, stops });
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw error;
  }
}
