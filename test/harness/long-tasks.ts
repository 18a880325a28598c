/**
 * The set-up of tests that watch streams stay open (leases, resubscriptions, sweeps): a demo agent whose tasks stay
 * WORKING past the test, a producer, and numbered delegations to that agent; or tasks held until the test releases
 * them.
 */
import { afterAll, beforeAll } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { DelegationRef } from '@durable-a2a/shared';
import { startDemoAgent, type DemoAgentHandle } from './agent.ts';
import { completionSteps, runsSlowly, type Behaviour } from './agent-behaviours.ts';

/** How long each task of `startLongTasks`'s agent works before it completes: longer than any test. */
export const LONG_TASK_MS = 120_000;

/** An agent whose tasks work `LONG_TASK_MS` (`runsSlowly`), and a producer on `prefix` of `redisUrl` (loopback allowed). */
export async function startLongTasks(redisUrl: string, prefix: string): Promise<{ agent: DemoAgentHandle; producer: Producer }> {
  const agent = await startDemoAgent({ behaviour: runsSlowly(LONG_TASK_MS) });
  const producer = createProducer({ redis: redisUrl, addressPolicy: { allowLoopback: true }, prefix });
  return { agent, producer };
}

/**
 * `count` delegations to the agent at `cardUrl`, sent at once (text `job <n>`, idempotency key `job-<n>`, n from 0);
 * returns what `delegate` answered (workflow id, messageId) in that order and the refs of their first delegations (main.1).
 */
export async function delegateJobs(producer: Producer, cardUrl: string, count: number): Promise<{ sent: Awaited<ReturnType<Producer['delegate']>>[]; refs: DelegationRef[] }> {
  const sent = await Promise.all(Array.from({ length: count }, (_, index) => producer.delegate({ agent: cardUrl, text: `job ${index}`, idempotencyKey: `job-${index}` })));
  return { sent, refs: sent.map(({ id }) => ({ workflowId: id, delegationId: 'main.1' })) };
}

/** What `useHeldTasks` gives a describe. */
export interface HeldTasks {
  /** The agent (started in `beforeAll`, closed in `afterAll`); valid inside tests. */
  agent(): DemoAgentHandle;
  /** From now on the agent's tasks report WORKING, then wait until `release()`, then complete with `done`. */
  hold(): void;
  /** Lets the tasks held since the last `hold()` complete (any number of times; nothing when none are held). */
  release(): void;
}

/**
 * Vitest helper for a describe whose tests need tasks that work until the test says (a takeover measured, not the
 * agent's pace): one demo agent for the describe; `afterAll` releases what is held, then closes it.
 */
export function useHeldTasks(): HeldTasks {
  let agent: DemoAgentHandle | undefined;
  let release: () => void = () => undefined;
  beforeAll(async () => {
    agent = await startDemoAgent();
  });
  afterAll(async () => {
    release();
    await agent?.close();
  });
  const current = (): DemoAgentHandle => {
    if (!agent) throw new Error('useHeldTasks: the agent is only available inside tests (after beforeAll)');
    return agent;
  };
  return {
    agent: current,
    hold() {
      const released = new Promise<void>((resolve) => (release = resolve));
      current().setBehaviour((() => [{ state: 'WORKING' }, { sideEffect: () => released }, ...completionSteps('done').slice(1)]) satisfies Behaviour);
    },
    release: () => release(),
  };
}
