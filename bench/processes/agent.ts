/**
 * Benchmark agents in their own process, so that their CPU never counts in the
 * measured process (`BENCH_AGENT_BEHAVIOUR`: `completes:<delayMs>` = WORKING →
 * delay → artifact → COMPLETED; `slow:<ms>` = WORKING for `ms`, then done; a
 * comma-separated list starts one agent per entry, each on its own port).
 * Ready with the first agent's `cardUrl` and `baseUrl`, and `agents`: every
 * agent's, in the list's order. Answers `{ call: 'sendMessageCount' |
 * 'requestCount', method? }` (summed over the agents), `cpuMicros`,
 * `arrivals` (when each message text first reached an agent's executor, ms
 * since epoch, for the texts given) and `executions(textPrefix)` (executions
 * counted per message text and per messageId: a text executed twice is a
 * delegation duplicated) over IPC; exits when the parent says
 * `{ call: 'stop' }` or disconnects.
 */
import { completesWith, runsSlowly, startDemoAgent, type A2AMethod, type Behaviour } from '@durable-a2a/testing';
import { serveCalls } from './ipc.ts';

/** First arrival of each message text at an executor (ms since epoch). */
const arrivals = new Map<string, number>();
const byText = new Map<string, number>();
const byMessageId = new Map<string, { text: string; count: number }>();
const behaviourOf = (spec: string): Behaviour => {
  const [kind, value] = spec.split(':');
  const ms = Number(value ?? '0');
  const behaviour = kind === 'slow' ? runsSlowly(ms) : completesWith('the result of the delegation', { delayMs: ms });
  return (request) => {
    if (!arrivals.has(request.text)) arrivals.set(request.text, Date.now());
    byText.set(request.text, (byText.get(request.text) ?? 0) + 1);
    byMessageId.set(request.messageId, { text: request.text, count: (byMessageId.get(request.messageId)?.count ?? 0) + 1 });
    return behaviour(request);
  };
};
const specs = (process.env.BENCH_AGENT_BEHAVIOUR ?? 'completes:0').split(',');
const agents = await Promise.all(specs.map((spec) => startDemoAgent({ behaviour: behaviourOf(spec.trim()) })));
const sum = (count: (agent: (typeof agents)[number]) => number) => agents.reduce((total, agent) => total + count(agent), 0);

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
  { cardUrl: agents[0]!.cardUrl, baseUrl: agents[0]!.baseUrl, agents: agents.map((agent) => ({ cardUrl: agent.cardUrl, baseUrl: agent.baseUrl })) },
  {
    sendMessageCount: async () => sum((agent) => agent.sendMessageCount()),
    requestCount: async (argument) => sum((agent) => agent.requestCount(argument as A2AMethod)),
    arrivals: async (texts) => (texts as string[]).map((text) => arrivals.get(text) ?? null),
    executions: async (prefix) => executions(String(prefix ?? '')),
    cpuMicros: async () => {
      const usage = process.cpuUsage();
      return usage.user + usage.system;
    },
  },
  async () => {
    for (const agent of agents) {
      await agent.restart({ forgetTasks: true });
      await agent.close();
    }
  },
);
