/**
 * What the interop matrix (test/harness/interop-matrix.ts, run by test/interop/matrix.test.ts over JSON-RPC and
 * HTTP+JSON and by test/interop/grpc-matrix.test.ts over gRPC) builds on: the one scripted behaviour, message and
 * task helpers, and a raw webhook.
 */
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Message, StreamResponse, Task } from '../../packages/a2a/src/index.ts';
import { type Behaviour, completionSteps } from './agent-behaviours.ts';
import { closeServer, listenOnLoopback, trackSockets } from './ports.ts';

/** One behaviour for every scenario, chosen by the message text (`ask`, `slow`, `paced`, anything else completes). */
export const scripted: Behaviour = (request) => {
  if (request.isFollowUp) return completionSteps(`booked ${request.text}`);
  if (request.text === 'ask') return [{ state: 'INPUT_REQUIRED', text: 'which day?' }];
  if (request.text === 'slow') return [{ state: 'WORKING' }, { delayMs: 20_000 }, ...completionSteps('late').slice(1)];
  if (request.text === 'paced') return [{ state: 'WORKING' }, { delayMs: 300 }, { artifact: { artifactId: 'result', text: 'paced', lastChunk: true } }, { delayMs: 100 }, { state: 'COMPLETED' }];
  return completionSteps('done');
};

/** A user message with a fresh messageId. */
export const userMessage = (text: string, extra: Partial<Message> = {}): Message => ({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra });

/** The task of a SendMessage answer; throws when the agent answered with a message. */
export function taskOf(result: { task: Task } | { message: Message }): Task {
  if (!('task' in result)) throw new Error(`expected a task, got ${JSON.stringify(result)}`);
  return result.task;
}

/** Polls `probe` every 25 ms until it gives a value; throws after `timeoutMs` (default 5,000). */
export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('waitFor: timed out');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Every text part of every artifact, joined. */
export const artifactText = (task: Task): string => (task.artifacts ?? []).flatMap((artifact) => artifact.parts.map((part) => part.text ?? '')).join('');

/** The task id a stream response names, if any. */
export const taskIdOf = (response: StreamResponse): string | undefined =>
  'task' in response ? response.task.id : 'statusUpdate' in response ? response.statusUpdate.taskId : 'artifactUpdate' in response ? response.artifactUpdate.taskId : undefined;

/** A raw node:http webhook recording every JSON body POSTed to it, with its headers. */
export async function startWebhook(): Promise<{ url: string; bodies: { headers: Record<string, unknown>; body: unknown }[]; close: () => Promise<void> }> {
  const bodies: { headers: Record<string, unknown>; body: unknown }[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      bodies.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown });
      response.writeHead(200).end();
    });
  });
  const sockets = trackSockets(server);
  const port = await listenOnLoopback(server, 0);
  return { url: `http://127.0.0.1:${port}/webhook`, bodies, close: async () => (sockets.destroyAll(), closeServer(server)) };
}
