/**
 * The set-up of tests that watch streams stay open (leases, resubscriptions, sweeps): a demo agent whose tasks stay
 * WORKING past the test, a producer, and numbered delegations to that agent.
 */
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { DelegationRef } from '@durable-a2a/shared';
import { startDemoAgent, type DemoAgentHandle } from './agent.ts';
import { runsSlowly } from './agent-behaviours.ts';

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
