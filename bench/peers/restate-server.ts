/**
 * A private restate-server for the Restate peer: the binary the npm package `@restatedev/restate-server` ships
 * (its per-platform optional dependency, `@restatedev/restate-server-<platform>-<arch>/bin/restate-server`, the
 * path its own launcher resolves), on three free loopback ports (ingress, admin, node-to-node), with its data
 * in a fresh temp directory that `stop()` removes. Restate's defaults otherwise: every write fsynced
 * (`rocksdb-disable-wal-fsync = false`), 24 partitions. Telemetry is off.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findFreePort } from '@durable-a2a/testing';
import { sleep } from '../common.ts';
import { killOnExit } from './processes.ts';

/** How long a starting server may take to answer its admin and ingress health checks. */
const READY_TIMEOUT_MS = 60_000;

/** The restate-server binary from node_modules, or undefined when this platform's package is not installed. */
export function restateServerBinary(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const launcher = createRequire(require.resolve('@restatedev/restate-server/package.json'));
    return launcher.resolve(`@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`);
  } catch {
    return undefined;
  }
}

/** `restate-server --version`, e.g. `1.7.12`, or 'unknown'. */
export function restateServerVersion(): string {
  const binary = restateServerBinary();
  if (!binary) return 'not installed';
  try {
    return execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim().replace(/^restate-server\s*/, '');
  } catch {
    return 'unknown';
  }
}

export interface RestateServer {
  pid: number;
  ingressUrl: string;
  adminUrl: string;
  /** Registers the service deployment at `uri` (POST /deployments, force). Throws with the server's answer. */
  register(uri: string): Promise<void>;
  /** SIGTERM (SIGKILL after 10 s), then removes the data directory. */
  stop(): Promise<void>;
}

async function healthy(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2_000) })).ok;
  } catch {
    return false;
  }
}

export async function startRestateServer(): Promise<RestateServer> {
  const binary = restateServerBinary();
  if (!binary) throw new Error('restate-server: @restatedev/restate-server has no binary for this platform installed');
  const dir = await mkdtemp(join(tmpdir(), 'peers-restate-'));
  const [ingressPort, adminPort, nodePort] = [await findFreePort(), await findFreePort(), await findFreePort()];
  const child: ChildProcess = spawn(binary, ['--no-logo'], {
    env: {
      PATH: process.env.PATH ?? '',
      RESTATE_BASE_DIR: dir,
      RESTATE_LISTEN_MODE: 'tcp',
      RESTATE_BIND_ADDRESS: `127.0.0.1:${nodePort}`,
      RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${nodePort}/`,
      RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingressPort}`,
      RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`,
      RESTATE_DISABLE_TELEMETRY: 'true',
      // octocrab: its release check, which has no network here.
      RESTATE_LOG_FILTER: 'error,octocrab=off',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
    // Its own process group, as every side process (it is SIGSTOPped while idle); killed when this process exits.
    detached: true,
  });
  killOnExit(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const ingressUrl = `http://127.0.0.1:${ingressPort}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await healthy(`${adminUrl}/health`)) || !(await healthy(`${ingressUrl}/restate/health`))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`restate-server did not become healthy within ${READY_TIMEOUT_MS} ms (exit code ${child.exitCode})`);
    }
    await sleep(200);
  }
  return {
    pid: child.pid!,
    ingressUrl,
    adminUrl,
    async register(uri) {
      const answer = await fetch(`${adminUrl}/deployments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ uri, force: true }),
      });
      if (!answer.ok) throw new Error(`restate-server: registering ${uri} answered ${answer.status}: ${await answer.text()}`);
    },
    stop,
  };
}
