/**
 * A benchmark agent in its own process, so that its CPU never counts in the
 * measured process (`BENCH_AGENT_BEHAVIOUR`: `completes:<delayMs>` = WORKING →
 * delay → artifact → COMPLETED; `slow:<ms>` = WORKING for `ms`, then done).
 * Answers `{ call: 'sendMessageCount' | 'requestCount', method? }` over IPC;
 * exits when the parent says `{ call: 'stop' }` or disconnects.
 */
import { completesWith, runsSlowly, startDemoAgent, type A2AMethod } from '@durable-a2a/testing';
import { serveCalls } from './ipc.ts';

const spec = process.env.BENCH_AGENT_BEHAVIOUR ?? 'completes:0';
const [kind, value] = spec.split(':');
const ms = Number(value ?? '0');
const behaviour = kind === 'slow' ? runsSlowly(ms) : completesWith('the result of the delegation', { delayMs: ms });
const agent = await startDemoAgent({ behaviour });

serveCalls(
  { cardUrl: agent.cardUrl, baseUrl: agent.baseUrl },
  {
    sendMessageCount: async () => agent.sendMessageCount(),
    requestCount: async (argument) => agent.requestCount(argument as A2AMethod),
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
