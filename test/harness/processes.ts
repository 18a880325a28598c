/**
 * The two executables (`durable-a2a-api`, `durable-a2a-workers`) as child
 * processes with stdout captured line by line, for tests about what an
 * operator sees: exit codes, close times, log lines.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SOURCE_EXEC_ARGV, TEST_TIMINGS } from './fleet.ts';

const MAINS = {
  api: fileURLToPath(new URL('../../packages/producer/src/server/main.ts', import.meta.url)),
  workers: fileURLToPath(new URL('../../packages/workers/src/main.ts', import.meta.url)),
};

export interface ObservedProcess {
  child: ChildProcess;
  /** Every complete stdout line so far. */
  stdoutLines(): string[];
  /** Every stderr byte so far. */
  stderr(): string;
  /** The `process.send` ready message (API: `port`; workers: `opsPort`). */
  ready: Promise<{ port?: number; opsPort?: number }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts one executable with `environment` (PATH and short test timings added) and stdout piped. */
export function spawnObserved(kind: keyof typeof MAINS, environment: Record<string, string>): ObservedProcess {
  const child = fork(MAINS[kind], [], {
    execArgv: SOURCE_EXEC_ARGV,
    env: { PATH: process.env.PATH ?? '', DA2A_CLOSE_TIMEOUT_MS: String(TEST_TIMINGS.closeTimeoutMs), ...environment },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const ready = new Promise<{ port?: number; opsPort?: number }>((resolve, reject) => {
    child.on('message', (message: { ready?: boolean; port?: number; opsPort?: number }) => message.ready && resolve(message));
    void exited.then(({ code }) => reject(new Error(`${kind} exited before ready (code ${code}): ${stderr.slice(-2_000)}`)));
  });
  ready.catch(() => undefined);
  return {
    child,
    stdoutLines: () => stdout.split('\n').slice(0, -1),
    stderr: () => stderr,
    ready,
    exited,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
