/**
 * A benchmark agent in its own process, so that its CPU never counts in the
 * measured process (`BENCH_AGENT_BEHAVIOUR`: `completes:<delayMs>` = WORKING →
 * delay → artifact → COMPLETED; `slow:<ms>` = WORKING for `ms`, then done).
 * Answers `{ call: 'sendMessageCount' | 'requestCount', method? }` and
 * `executions(textPrefix)` (executions counted per message text and per
 * messageId: a text executed twice is a delegation duplicated) over IPC;
 * exits when the parent says `{ call: 'stop' }` or disconnects.
 */
import { completesWith, runsSlowly, startDemoAgent, type A2AMethod, type Behaviour } from '@durable-a2a/testing';
import { serveCalls } from './ipc.ts';

const spec = process.env.BENCH_AGENT_BEHAVIOUR ?? 'completes:0';
const [kind, value] = spec.split(':');
const ms = Number(value ?? '0');
const played: Behaviour = kind === 'slow' ? runsSlowly(ms) : completesWith('the result of the delegation', { delayMs: ms });
const byText = new Map<string, number>();
const byMessageId = new Map<string, { text: string; count: number }>();
const behaviour: Behaviour = (request) => {
  byText.set(request.text, (byText.get(request.text) ?? 0) + 1);
  byMessageId.set(request.messageId, { text: request.text, count: (byMessageId.get(request.messageId)?.count ?? 0) + 1 });
  return played(request);
};
const agent = await startDemoAgent({ behaviour });

/** What the agent executed for delegations whose text starts with `prefix`. */
export interface Executions {
  /** Distinct texts (delegations) executed at least once. */
  delegations: number;
  /** Texts executed more than once: duplicated delegations. */
  duplicatedDelegations: number;
  /** Executions in all (SendMessage calls that reached the executor). */
  executions: number;
  /** messageIds executed more than once. */
  duplicatedMessageIds: number;
}

function executions(prefix: string): Executions {
  const counts = [...byText].filter(([text]) => text.startsWith(prefix)).map(([, count]) => count);
  return {
    delegations: counts.length,
    duplicatedDelegations: counts.filter((count) => count > 1).length,
    executions: counts.reduce((sum, count) => sum + count, 0),
    duplicatedMessageIds: [...byMessageId.values()].filter(({ text, count }) => text.startsWith(prefix) && count > 1).length,
  };
}

serveCalls(
  { cardUrl: agent.cardUrl, baseUrl: agent.baseUrl },
  {
    sendMessageCount: async () => agent.sendMessageCount(),
    requestCount: async (argument) => agent.requestCount(argument as A2AMethod),
    executions: async (prefix) => executions(String(prefix ?? '')),
    cpuMicros: async () => {
      const usage = process.cpuUsage();
      return usage.user + usage.system;
    },
  },
  async () => {
    await agent.restart({ forgetTasks: true });
    await agent.close();
  },
);
