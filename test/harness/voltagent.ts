/**
 * VoltAgent's A2A server as a test agent (field-reports-2.md "An agent nobody here wrote"): an A2A
 * server not built on @a2a-js/sdk. `@voltagent/a2a-server` 2.0.3 on `@voltagent/server-hono` 2.0.14,
 * with the echo model (`echo-model.ts`, no LLM): it echoes the last user text as `Volt echo: <text>`,
 * and `slow:<ms> <text>` waits `<ms>` first (aborted by a cancel).
 * Started in a child process by `startVoltAgent` (`voltagent-agent.ts`).
 * Card at `/.well-known/echo/agent-card.json` (0.3 shape: root `url`, no `protocolVersion`), JSON-RPC
 * at `/a2a/echo`: `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`; no resubscribe, no list, no push.
 */
import { A2AServer } from '@voltagent/a2a-server';
import { Agent, VoltAgent } from '@voltagent/core';
import { honoServer } from '@voltagent/server-hono';
import { echoModel } from './echo-model.ts';

/**
 * Child-process entry (`voltagent.ts serve`): starts VoltAgent with one echo agent and its A2A server
 * on 127.0.0.1:`port`, then reports `{ready}` and every prompt over IPC. Run as a child with
 * NODE_ENV=production, because @voltagent/core fetches a model registry from the internet at import
 * otherwise, and so its signal handlers and globals stay out of the test process.
 */
async function serve(port: number): Promise<void> {
  const report = (message: unknown) => process.send?.(message);
  const echo = new Agent({ id: 'echo', name: 'echo', instructions: 'Echo the user.', model: echoModel('Volt echo: ', (text) => report({ prompt: text })) as never });
  const a2a = new A2AServer({ id: 'echo', name: 'echo', version: '0.0.1', description: 'Echo agent for durable-a2a tests' });
  const volt = new VoltAgent({ agents: { echo }, a2aServers: { echo: a2a }, server: honoServer({ port, hostname: '127.0.0.1' } as never) });
  await volt.ready;
  report({ ready: true });
}

if (process.argv[2] === 'serve') void serve(Number(process.argv[3]));
