/**
 * Starts the Mastra echo agent (`mastra.ts`) in a child process on a free loopback port, and stops it.
 * The child runs with MASTRA_TELEMETRY_DISABLED (no analytics call to the internet).
 */
import { fileURLToPath } from 'node:url';
import { onFreePort, startAgentProcess } from './agent-process.ts';
import type { MastraRequestReport } from './mastra.ts';

const ENTRY = fileURLToPath(new URL('./mastra.ts', import.meta.url));

export interface MastraAgentHandle {
  /** `http://127.0.0.1:<port>` */
  baseUrl: string;
  /** The Agent Card URL (`/api/.well-known/echo/agent-card.json`, 0.3 shape, `protocolVersion` "0.3.0"). */
  cardUrl: string;
  /** The JSON-RPC endpoint (`/api/a2a/echo`). */
  rpcUrl: string;
  /** Texts the mock model was asked to answer, in order (one per run of the agent). */
  prompts: string[];
  /** Texts the mock model answered, in order: runs that were not aborted. */
  answered: string[];
  /** JSON-RPC requests the A2A route received, in order (counted before Mastra handles them). */
  requests: MastraRequestReport[];
  /** How many message/send or message/stream requests carried `messageId`. */
  sendsOf(messageId: string): number;
  /** Kills the child (SIGKILL after 5 s if SIGTERM is not enough). */
  close(): Promise<void>;
}

/**
 * Starts Mastra's A2A server with the echo model (`slow:<ms> text` waits, `fail: text` fails,
 * `hold:<ms> text` holds the HTTP answer). Ready when it listens.
 */
export async function startMastraAgent(): Promise<MastraAgentHandle> {
  const prompts: string[] = [];
  const answered: string[] = [];
  const requests: MastraRequestReport[] = [];
  const { port, child } = await onFreePort(async (port) => {
    const child = await startAgentProcess('Mastra', ENTRY, port, { MASTRA_TELEMETRY_DISABLED: '1' }, (message) => {
      if (typeof message.prompt === 'string') prompts.push(message.prompt);
      if (typeof message.answered === 'string') answered.push(message.answered);
      if (message.request) requests.push(message.request as MastraRequestReport);
    });
    return { port, child };
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const isSend = (request: MastraRequestReport) => request.method === 'message/send' || request.method === 'message/stream';
  return {
    baseUrl,
    cardUrl: `${baseUrl}/api/.well-known/echo/agent-card.json`,
    rpcUrl: `${baseUrl}/api/a2a/echo`,
    prompts,
    answered,
    requests,
    sendsOf: (messageId) => requests.filter((request) => isSend(request) && request.messageId === messageId).length,
    close: () => child.close(),
  };
}
