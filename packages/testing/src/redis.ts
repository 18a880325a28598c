/**
 * A private `redis-server` per test (or per example): its own port, its own temp directory,
 * no RDB snapshots, `noeviction` (BullMQ and the journal must never lose keys to
 * eviction), optionally AOF so a kill + restart keeps acknowledged writes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { findFreePort } from './ports.ts';

export interface RedisServerOptions {
  /** `--appendonly yes` when true. Default false. */
  appendOnly?: boolean;
  /** `--appendfsync`; only meaningful with `appendOnly`. Default 'everysec' (Redis' own default). */
  appendFsync?: 'always' | 'everysec';
  /** `--save` rule; default '' (no RDB snapshots). */
  save?: string;
  /** More `redis-server` arguments, e.g. `['--replicaof', '127.0.0.1', '6379']`. Default none. */
  extraArguments?: string[];
  /**
   * Run the server in its own process group, so a Ctrl+C or a signal to the caller's group does not stop
   * it under the caller's feet: the caller stops it with `stop()` after closing its clients. Default false.
   */
  detached?: boolean;
}

export interface RedisServerHandle {
  readonly port: number;
  /** `redis://127.0.0.1:PORT` */
  readonly url: string;
  /** The server's `--dir` (AOF and RDB files live here); removed by `stop()`. */
  readonly dir: string;
  /** Graceful shutdown (SIGTERM), then removes `dir`. Safe to call twice. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash: nothing is flushed, `dir` is kept so `restart()` can recover from it. */
  kill(): Promise<void>;
  /** Stops the server if it runs (SIGTERM), then starts it again on the same port and `dir`. */
  restart(): Promise<void>;
}

/** How long a starting server may take to answer PING. */
const READY_TIMEOUT_MS = 10_000;
/** How long SIGTERM may take before we escalate to SIGKILL. */
const STOP_TIMEOUT_MS = 5_000;
/** Attempts with a fresh port when another process grabbed ours between probe and bind. */
const PORT_ATTEMPTS = 3;

const liveServers = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of liveServers) child.kill('SIGKILL');
});

/**
 * Finds the `redis-server` binary: `REDIS_SERVER_BIN` if set, else the first
 * executable `redis-server` on PATH. Throws with the fix in the message.
 */
export function resolveRedisServerBinary(): string {
  const configured = process.env.REDIS_SERVER_BIN;
  const candidates = configured
    ? [configured]
    : (process.env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, 'redis-server'));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here; try the next one
    }
  }
  const looked = configured ? `REDIS_SERVER_BIN=${configured} is not an executable file` : 'redis-server is not on PATH';
  throw new Error(
    `@durable-a2a/testing needs a local redis-server, but ${looked}. ` +
      'Fix: `apt-get install redis-server` (or `brew install redis`), or set REDIS_SERVER_BIN to the binary.',
  );
}

/**
 * Starts a private `redis-server` on a free port of 127.0.0.1 in a fresh temp
 * directory and resolves once it answers PING.
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServerHandle> {
  const binary = resolveRedisServerBinary();
  const dir = await mkdtemp(join(tmpdir(), 'durable-a2a-redis-'));
  let port = 0;
  let child: ChildProcess | undefined;
  for (let attempt = 1; child === undefined; attempt++) {
    port = await findFreePort();
    try {
      child = await spawnReady(binary, serverArguments(port, dir, options), port, options.detached);
    } catch (error) {
      const portTaken = error instanceof Error && /Address already in use/i.test(error.message);
      if (!portTaken || attempt >= PORT_ATTEMPTS) {
        await rm(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
  let stopped = false;
  const boundPort = port;
  return {
    port: boundPort,
    url: `redis://127.0.0.1:${boundPort}`,
    dir,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (child) await terminate(child, 'SIGTERM');
      child = undefined;
      await rm(dir, { recursive: true, force: true });
    },
    async kill() {
      if (child) await terminate(child, 'SIGKILL');
      child = undefined;
    },
    async restart() {
      if (stopped) throw new Error('restart() after stop(): the data directory is gone');
      if (child) await terminate(child, 'SIGTERM');
      child = undefined;
      child = await spawnReady(binary, serverArguments(boundPort, dir, options), boundPort, options.detached);
    },
  };
}

function serverArguments(port: number, dir: string, options: RedisServerOptions): string[] {
  const appendOnly = options.appendOnly ?? false;
  return [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', dir,
    '--save', options.save ?? '',
    '--appendonly', appendOnly ? 'yes' : 'no',
    '--appendfsync', options.appendFsync ?? 'everysec',
    '--maxmemory-policy', 'noeviction',
    '--daemonize', 'no',
    '--loglevel', 'warning',
    ...(options.extraArguments ?? []),
  ];
}

/**
 * Spawns `binary args` (a redis-server, or one run as a Sentinel) and resolves once it answers PING on
 * `port` (within 10 s); rejects with its log if it exits first. The process is SIGKILLed when this process exits.
 * `detached`: in its own process group (see `RedisServerOptions.detached`). Default false.
 */
export async function spawnReady(binary: string, args: string[], port: number, detached = false): Promise<ChildProcess> {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], detached });
  liveServers.add(child);
  let log = '';
  const keepLog = (chunk: Buffer): void => {
    log = (log + chunk.toString()).slice(-4_000);
  };
  child.stdout?.on('data', keepLog);
  child.stderr?.on('data', keepLog);
  const exited = new Promise<never>((_, reject) => {
    child.once('error', (error) => reject(new Error(`could not run ${binary}: ${error.message}`, { cause: error })));
    child.once('exit', (code, signal) => {
      liveServers.delete(child);
      reject(new Error(`redis-server exited during start-up (code ${code}, signal ${signal}):\n${log}`));
    });
  });
  exited.catch(() => undefined);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  try {
    while (!(await Promise.race([answersPing(port), exited]))) {
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING in ${READY_TIMEOUT_MS} ms:\n${log}`);
      await Promise.race([sleep(25), exited]);
    }
  } catch (error) {
    await terminate(child, 'SIGKILL');
    throw error;
  }
  return child;
}

/** One PING over a raw socket; true on `+PONG`, false on any failure. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    const finish = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}

/** Sends `signal` and waits for the exit; escalates to SIGKILL after 5 s. */
export async function terminate(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    liveServers.delete(child);
    return;
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
  liveServers.delete(child);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
