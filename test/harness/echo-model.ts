/**
 * The deterministic model behind the independently written A2A servers the interop tests run
 * (VoltAgent, Mastra): `ai/test`'s `MockLanguageModelV3`, no LLM, no network. It answers
 * `<prefix><text>` for the last user text; `slow:<ms> <text>` waits `<ms>` first (at most 10 min,
 * aborted by the run's abort signal: a cancel, or the framework aborting the run); `fail: <text>`
 * throws, as a model provider's error would.
 */
import { MockLanguageModelV3 } from 'ai/test';

type Prompt = readonly { role: string; content: unknown }[];

/** The text of the last user message of a model prompt. */
function lastUserText(prompt: Prompt): string {
  const user = [...prompt].reverse().find((entry) => entry.role === 'user');
  if (!user) return '';
  if (typeof user.content === 'string') return user.content;
  return (user.content as { type: string; text?: string }[]).filter((part) => part.type === 'text').map((part) => part.text ?? '').join('');
}

/** `slow:<ms> rest` waits (bounded to 10 min, aborted by `signal`), then the echo of `rest`; `fail: rest` throws. */
async function answerFor(prefix: string, text: string, signal: AbortSignal | undefined): Promise<string> {
  const slow = /^slow:(\d+)\s*(.*)$/s.exec(text);
  if (slow) {
    const waitMs = Math.min(Number(slow[1]), 600_000);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, waitMs);
      signal?.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason ?? new Error('aborted')); }, { once: true });
    });
    return `${prefix}${slow[2]}`;
  }
  if (text.startsWith('fail:')) throw new Error(`the echo model refuses: ${text.slice(5).trim()}`);
  return `${prefix}${text}`;
}

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const finishReason = { unified: 'stop', raw: 'stop' };

/**
 * The echo model: answers `<prefix><text>`; `onPrompt` hears each text it is asked, before it answers,
 * and `onAnswer` each text it answered (a run that was not aborted).
 */
export function echoModel(prefix: string, onPrompt: (text: string) => void, onAnswer: (text: string) => void = () => undefined): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: (async (options: { prompt: Prompt; abortSignal?: AbortSignal }) => {
      const text = lastUserText(options.prompt);
      onPrompt(text);
      const answer = await answerFor(prefix, text, options.abortSignal);
      onAnswer(text);
      return { content: [{ type: 'text', text: answer }], finishReason, usage, warnings: [] };
    }) as never,
    doStream: (async (options: { prompt: Prompt; abortSignal?: AbortSignal }) => {
      const text = lastUserText(options.prompt);
      onPrompt(text);
      const answer = await answerFor(prefix, text, options.abortSignal);
      onAnswer(text);
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
