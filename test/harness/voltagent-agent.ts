/**
 * Starts the VoltAgent echo agent (`voltagent.ts`) in a child process on a free loopback port, and
 * stops it. The child runs with NODE_ENV=production (no model-registry fetch from the internet).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { findFreePort } from './ports.ts';

const ENTRY = fileURLToPath(new URL('./voltagent.ts', import.meta.url));

export interface VoltAgentHandle {
  /** `http://127.0.0.1:<port>` */
  baseUrl: string;
  /** The Agent Card URL (0.3 shape, root `url`). */
  cardUrl: string;
  /** The JSON-RPC endpoint. */
  rpcUrl: string;
  /** Texts the mock model was asked to answer, in order (one per message/send or message/stream). */
  prompts: string[];
  /** Kills the child (SIGKILL after 5 s if SIGTERM is not enough). */
  close(): Promise<void>;
}

/** Starts VoltAgent's A2A server with the echo model (`slow:<ms> text` waits first). Ready when the card is served. */
export async function startVoltAgent(): Promise<VoltAgentHandle> {
  const port = await findFreePort();
  const prompts: string[] = [];
  const child = fork(ENTRY, ['serve', String(port)], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-4_000)));
  child.on('message', (message: { prompt?: string }) => {
    if (typeof message.prompt === 'string') prompts.push(message.prompt);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`VoltAgent did not start in 60 s: ${stderr}`)), 60_000);
    child.on('message', (message: { ready?: boolean }) => {
      if (message.ready) { clearTimeout(timer); resolve(); }
    });
    void exited.then(() => { clearTimeout(timer); reject(new Error(`VoltAgent exited: ${stderr}`)); });
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  // `ready` comes before the HTTP server listens: wait for the card (bounded: 300 × 100 ms).
  for (let attempt = 0; ; attempt++) {
    const ok = await fetch(`${baseUrl}/.well-known/echo/agent-card.json`).then((response) => response.ok, () => false);
    if (ok) break;
    if (attempt >= 300) throw new Error(`VoltAgent card never served: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    baseUrl,
    cardUrl: `${baseUrl}/.well-known/echo/agent-card.json`,
    rpcUrl: `${baseUrl}/a2a/echo`,
    prompts,
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
