/**
 * Runs a test agent's entry module in a child process (`<entry> serve <port>`, under tsx), so a
 * framework's globals, signal handlers and stores stay out of the test process. The child reports over
 * IPC: `{ready: true}` once it serves, anything else goes to `onMessage`.
 */
import { fork } from 'node:child_process';
import { findFreePort } from './ports.ts';

/** A started agent child: `close` kills it (SIGTERM, SIGKILL after 5 s); `exitedWith` is the tail of its stderr once it exited, else undefined. */
export interface AgentProcess {
  close(): Promise<void>;
  exitedWith(): string | undefined;
}

/**
 * Runs `start` on a free loopback port, again on another one (at most 5 tries) when the child could not listen
 * because another process took the port between `findFreePort` and the child's listen (EADDRINUSE: seen once in a
 * clean-clone CI run while other test processes ran). Any other failure is thrown at once.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await findFreePort();
    try {
      return await start(port);
    } catch (error) {
      if (attempt >= 5 || !String((error as Error)?.message ?? error).includes('EADDRINUSE')) throw error;
    }
  }
}

/**
 * Forks `entry serve <port>` with `environment` added to this process's, and resolves once it reports
 * `{ready}`. Throws when it exits first or is not ready within 60 s (with the tail of its stderr).
 */
export async function startAgentProcess(
  name: string,
  entry: string,
  port: number,
  environment: Record<string, string>,
  onMessage: (message: Record<string, unknown>) => void,
): Promise<AgentProcess> {
  const child = fork(entry, ['serve', String(port)], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...environment },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-4_000)));
  child.on('message', (message: Record<string, unknown>) => onMessage(message));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 60 s: ${stderr}`)), 60_000);
    child.on('message', (message: { ready?: boolean }) => {
      if (message.ready) { clearTimeout(timer); resolve(); }
    });
    void exited.then(() => { clearTimeout(timer); reject(new Error(`${name} exited: ${stderr}`)); });
  });
  return {
    exitedWith: () => (child.exitCode !== null || child.signalCode !== null ? stderr : undefined),
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
