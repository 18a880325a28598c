/**
 * VoltAgent's A2A server as a test agent (field-reports-2.md "An agent nobody here wrote"): an A2A
 * server not built on @a2a-js/sdk. `@voltagent/a2a-server` 2.0.3 on `@voltagent/server-hono` 2.0.14,
 * with `ai/test`'s `MockLanguageModelV3` as the model (no LLM): it echoes the last user text as
 * `Volt echo: <text>`, and `slow:<ms> <text>` waits `<ms>` first (aborted by a cancel).
 * Started in a child process by `startVoltAgent` (`voltagent-agent.ts`).
 * Card at `/.well-known/echo/agent-card.json` (0.3 shape: root `url`, no `protocolVersion`), JSON-RPC
 * at `/a2a/echo`: `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`; no resubscribe, no list, no push.
 */
import { A2AServer } from '@voltagent/a2a-server';
import { Agent, VoltAgent } from '@voltagent/core';
import { honoServer } from '@voltagent/server-hono';
import { MockLanguageModelV3 } from 'ai/test';

type Prompt = readonly { role: string; content: unknown }[];

/** The text of the last user message of a model prompt. */
function lastUserText(prompt: Prompt): string {
  const user = [...prompt].reverse().find((entry) => entry.role === 'user');
  if (!user) return '';
  if (typeof user.content === 'string') return user.content;
  return (user.content as { type: string; text?: string }[]).filter((part) => part.type === 'text').map((part) => part.text ?? '').join('');
}

/** `slow:<ms> rest` → waits (bounded to 10 min, aborted by `signal`), then the echo of `rest`. */
async function answerFor(text: string, signal: AbortSignal | undefined): Promise<string> {
  const slow = /^slow:(\d+)\s*(.*)$/s.exec(text);
  if (slow) {
    const waitMs = Math.min(Number(slow[1]), 600_000);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, waitMs);
      signal?.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason ?? new Error('aborted')); }, { once: true });
    });
    return `Volt echo: ${slow[2]}`;
  }
  return `Volt echo: ${text}`;
}

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const finishReason = { unified: 'stop', raw: 'stop' };

function echoModel(prompts: string[], onPrompt: (text: string) => void): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: (async (options: { prompt: Prompt; abortSignal?: AbortSignal }) => {
      const text = lastUserText(options.prompt);
      prompts.push(text);
      onPrompt(text);
      return { content: [{ type: 'text', text: await answerFor(text, options.abortSignal) }], finishReason, usage, warnings: [] };
    }) as never,
    doStream: (async (options: { prompt: Prompt; abortSignal?: AbortSignal }) => {
      const text = lastUserText(options.prompt);
      prompts.push(text);
      onPrompt(text);
      const answer = await answerFor(text, options.abortSignal);
      const parts = [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: answer },
        { type: 'text-end', id: 't' },
        { type: 'finish', finishReason, usage },
      ];
      return { stream: new ReadableStream({ start(controller) { for (const part of parts) controller.enqueue(part); controller.close(); } }) };
    }) as never,
  });
}

/**
 * Child-process entry (`voltagent.ts serve`): starts VoltAgent with one echo agent and its A2A server
 * on 127.0.0.1:`port`, then reports `{ready}` and every prompt over IPC. Run as a child with
 * NODE_ENV=production, because @voltagent/core fetches a model registry from the internet at import
 * otherwise, and so its signal handlers and globals stay out of the test process.
 */
async function serve(port: number): Promise<void> {
  const prompts: string[] = [];
  const report = (message: unknown) => process.send?.(message);
  const echo = new Agent({ id: 'echo', name: 'echo', instructions: 'Echo the user.', model: echoModel(prompts, (text) => report({ prompt: text })) as never });
  const a2a = new A2AServer({ id: 'echo', name: 'echo', version: '0.0.1', description: 'Echo agent for durable-a2a tests' });
  const volt = new VoltAgent({ agents: { echo }, a2aServers: { echo: a2a }, server: honoServer({ port, hostname: '127.0.0.1' } as never) });
  await volt.ready;
  report({ ready: true });
}

if (process.argv[2] === 'serve') void serve(Number(process.argv[3]));
