/**
 * The Restate peer's service endpoint: service `Peers`, handler `delegate`, whose SendMessage and follow are each
 * one `ctx.run` (journaled by restate-server: after a crash the invocation replays, a finished `send` is not run
 * again, an unfinished `follow` is). Served over HTTP/2 (h2c, what restate-server speaks to a deployment) on
 * 127.0.0.1:`PORT` (0: any free port; a restarted endpoint is given the port it had, which is the URI the
 * deployment was registered with). Reports `{ port }` when ready.
 */
import { createServer } from 'node:http2';
import * as restate from '@restatedev/restate-sdk';
import { TaskState } from '@a2a-js/sdk';
import { z } from 'zod';
import { clientCache, followTask, sendTask, type SentTask } from './a2a-task.ts';
import { serveCalls } from './ipc.ts';

const DelegateInputSchema = z.object({ baseUrl: z.url(), text: z.string(), messageId: z.string() });
const config = z.object({ PORT: z.coerce.number().int().min(0).default(0) }).parse(process.env);
const clientFor = clientCache();

const peers = restate.service({
  name: 'Peers',
  handlers: {
    delegate: async (ctx: restate.Context, input: unknown): Promise<string> => {
      const { baseUrl, text, messageId } = DelegateInputSchema.parse(input);
      const sent = await ctx.run('send', async (): Promise<SentTask> => sendTask(await clientFor(baseUrl), text, messageId));
      const state = await ctx.run('follow', async () => (await followTask(await clientFor(baseUrl), sent)) ?? null);
      return state === null ? 'UNKNOWN' : TaskState[state];
    },
  },
});

const server = createServer(restate.createEndpointHandler({ services: [peers] }));
const port = await new Promise<number>((resolve, reject) => {
  server.once('error', reject);
  server.listen(config.PORT, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
});

serveCalls({ port, pid: process.pid }, {}, async () => {
  server.close();
});
