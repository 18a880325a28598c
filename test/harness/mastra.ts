/**
 * Mastra's A2A server as a test agent: an A2A 0.3 server whose protocol code is Mastra's own
 * (`@mastra/server`'s A2A handlers, mounted on a Hono app by `@mastra/hono`'s `MastraServer`, served
 * by `@hono/node-server`), the way the Mastra Hono guide has a user set it up. The agent's model is the
 * echo model (`echo-model.ts`; no LLM, no network): it answers `Mastra echo: <text>`;
 * `slow:<ms> <text>` waits `<ms>` first (aborted by a cancel or by Mastra aborting the run);
 * `fail: <text>` makes the model throw, so Mastra marks the task failed; `hold:<ms> <text>` holds
 * Mastra's HTTP answer `<ms>` (a Hono middleware) after Mastra has created the task.
 * Started in a child process by `startMastraAgent` (`mastra-agent.ts`), which reads the IPC reports:
 * `{ready}`, every prompt the model was asked and every one it answered, and every JSON-RPC request the A2A route received
 * (method and message id, counted by a Hono middleware in front of Mastra's routes).
 * Card at `/api/.well-known/echo/agent-card.json`, JSON-RPC at `/api/a2a/echo`.
 */
import { serve as serveHttp } from '@hono/node-server';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { type HonoBindings, type HonoVariables, MastraServer } from '@mastra/hono';
import { InMemoryTaskStore } from '@mastra/server/a2a/store';
import { Hono } from 'hono';
import { echoModel } from './echo-model.ts';

/** One JSON-RPC request seen at the A2A route, as reported to the parent process. */
export interface MastraRequestReport {
  method: string;
  /** `params.message.messageId` for message/send and message/stream. */
  messageId?: string;
  /** `params.id` for tasks/get, tasks/cancel, tasks/resubscribe. */
  taskId?: string;
}

/** The method and ids of a JSON-RPC request body (`undefined` when it is not one). */
function describeRequest(body: unknown): MastraRequestReport | undefined {
  if (typeof body !== 'object' || body === null || typeof (body as { method?: unknown }).method !== 'string') return undefined;
  const { method, params } = body as { method: string; params?: { id?: unknown; message?: { messageId?: unknown } } };
  const messageId = params?.message?.messageId;
  const taskId = params?.id;
  return { method, ...(typeof messageId === 'string' ? { messageId } : {}), ...(typeof taskId === 'string' ? { taskId } : {}) };
}

/** The first text part of a JSON-RPC request's `params.message` ('' when there is none). */
function firstText(body: unknown): string {
  const parts = (body as { params?: { message?: { parts?: { text?: unknown }[] } } } | undefined)?.params?.message?.parts;
  const text = Array.isArray(parts) ? parts.find((part) => typeof part?.text === 'string')?.text : undefined;
  return typeof text === 'string' ? text : '';
}

/**
 * Child-process entry (`mastra.ts serve <port>`): one echo agent on a Mastra instance, mounted with
 * `MastraServer` on a Hono app (default `/api` prefix) listening on 127.0.0.1:`port`. Reports `{ready}`
 * once listening, `{prompt}` per model call, `{answered}` per run not aborted and `{request}` per JSON-RPC request to the A2A route.
 */
async function serve(port: number): Promise<void> {
  const report = (message: unknown) => process.send?.(message);
  const echo = new Agent({ id: 'echo', name: 'echo', instructions: 'Echo the user.', model: echoModel('Mastra echo: ', (text) => report({ prompt: text }), (text) => report({ answered: text })) as never });
  const mastra = new Mastra({ agents: { echo } });
  const app = new Hono<{ Bindings: HonoBindings; Variables: HonoVariables }>();
  // Counts what reached the agent before Mastra's routes see it (reads a clone, so the body stays
  // unread); a message whose text starts `hold:<ms>` has Mastra's answer held `<ms>` before it leaves,
  // as a slow hop in front of the agent would: the task exists, the caller does not hear of it yet.
  app.use('/api/a2a/*', async (context, next) => {
    const body: unknown = await context.req.raw.clone().json().catch(() => undefined);
    const request = describeRequest(body);
    if (request) report({ request });
    await next();
    const hold = /^hold:(\d+)/.exec(firstText(body));
    if (hold) await new Promise((resolve) => setTimeout(resolve, Math.min(Number(hold[1]), 600_000)));
  });
  // The Hono guide's `new MastraServer({ app, mastra })` has no task store: every A2A call then answers
  // JSON-RPC -32603 "Cannot read properties of undefined" (the handlers read `taskStore` unguarded).
  // The MastraServer reference lists `taskStore` (an InMemoryTaskStore) among its options: a user passes one.
  const server = new MastraServer({ app, mastra, taskStore: new InMemoryTaskStore() });
  await server.init();
  await new Promise<void>((resolve) => serveHttp({ fetch: app.fetch, port, hostname: '127.0.0.1' }, () => resolve()));
  report({ ready: true });
}

if (process.argv[2] === 'serve') void serve(Number(process.argv[3]));
