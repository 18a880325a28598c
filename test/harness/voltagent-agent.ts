/**
 * Starts the VoltAgent echo agent (`voltagent.ts`) in a child process on a free loopback port, and
 * stops it. The child runs with NODE_ENV=production (no model-registry fetch from the internet).
 */
import { fileURLToPath } from 'node:url';
import { onFreePort, startAgentProcess } from './agent-process.ts';

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
  const prompts: string[] = [];
  const { port, child } = await onFreePort(async (port) => {
    const child = await startAgentProcess('VoltAgent', ENTRY, port, { NODE_ENV: 'production' }, (message) => {
      if (typeof message.prompt === 'string') prompts.push(message.prompt);
    });
    const baseUrl = `http://127.0.0.1:${port}`;
    // `ready` comes before the HTTP server listens: wait for the card (bounded: 300 × 100 ms); a child that exited
    // meanwhile (its port taken: EADDRINUSE) is reported with its stderr, so `onFreePort` tries another port.
    for (let attempt = 0; ; attempt++) {
      const ok = await fetch(`${baseUrl}/.well-known/echo/agent-card.json`).then((response) => response.ok, () => false);
      if (ok) break;
      const exited = child.exitedWith();
      if (exited !== undefined) throw new Error(`VoltAgent exited: ${exited}`);
      if (attempt >= 300) {
        await child.close();
        throw new Error('VoltAgent card never served');
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { port, child };
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    baseUrl,
    cardUrl: `${baseUrl}/.well-known/echo/agent-card.json`,
    rpcUrl: `${baseUrl}/a2a/echo`,
    prompts,
    close: () => child.close(),
  };
}
