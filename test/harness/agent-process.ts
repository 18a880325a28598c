/**
 * Runs a test agent's entry module in a child process (`<entry> serve <port>`, under tsx), so a
 * framework's globals, signal handlers and stores stay out of the test process. The child reports over
 * IPC: `{ready: true}` once it serves, anything else goes to `onMessage`.
 */
import { fork } from 'node:child_process';

/** A started agent child: `close` kills it (SIGTERM, SIGKILL after 5 s). */
export interface AgentProcess {
  close(): Promise<void>;
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
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
