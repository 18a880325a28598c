/**
 * Benchmark agents in their own process, so that their CPU never counts in the
 * measured process (`BENCH_AGENT_BEHAVIOUR`: `completes:<delayMs>` = WORKING →
 * delay → artifact → COMPLETED; `slow:<ms>` = WORKING for `ms`, then done; a
 * comma-separated list starts one agent per entry, each on its own port).
 * Ready with the first agent's `cardUrl` and `baseUrl`, and `agents`: every
 * agent's, in the list's order. Answers `{ call: 'sendMessageCount' |
 * 'requestCount', method? }` (summed over the agents), `cpuMicros` and
 * `arrivals` (when each message text first reached an agent's executor, ms
 * since epoch, for the texts given) over IPC; exits when the parent says
 * `{ call: 'stop' }` or disconnects.
 */
import { completesWith, runsSlowly, startDemoAgent, type A2AMethod, type Behaviour } from '@durable-a2a/testing';
import { serveCalls } from './ipc.ts';

/** First arrival of each message text at an executor (ms since epoch). */
const arrivals = new Map<string, number>();
const behaviourOf = (spec: string): Behaviour => {
  const [kind, value] = spec.split(':');
  const ms = Number(value ?? '0');
  const behaviour = kind === 'slow' ? runsSlowly(ms) : completesWith('the result of the delegation', { delayMs: ms });
  return (request) => {
    if (!arrivals.has(request.text)) arrivals.set(request.text, Date.now());
    return behaviour(request);
  };
};
const specs = (process.env.BENCH_AGENT_BEHAVIOUR ?? 'completes:0').split(',');
const agents = await Promise.all(specs.map((spec) => startDemoAgent({ behaviour: behaviourOf(spec.trim()) })));
const sum = (count: (agent: (typeof agents)[number]) => number) => agents.reduce((total, agent) => total + count(agent), 0);

serveCalls(
  { cardUrl: agents[0]!.cardUrl, baseUrl: agents[0]!.baseUrl, agents: agents.map((agent) => ({ cardUrl: agent.cardUrl, baseUrl: agent.baseUrl })) },
  {
    sendMessageCount: async () => sum((agent) => agent.sendMessageCount()),
    requestCount: async (argument) => sum((agent) => agent.requestCount(argument as A2AMethod)),
    arrivals: async (texts) => (texts as string[]).map((text) => arrivals.get(text) ?? null),
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
