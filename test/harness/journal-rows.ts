/**
 * Journal rows for tests that drive the journal directly (no fleet): a first attempt's INTENT row as the
 * producer would journal it, and a journal holding one.
 */
import { afterAll, beforeAll } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { createRedisClient, Journal, type DelegationRecord, type DelegationRef, type RedisClient } from '@durable-a2a/shared';
import { eventually } from './fleet.ts';

/** The INTENT row of delegation `delegationId` (step `main`, attempt 1) of `workflowId`, for `createWorkflow` / `createIntent`. */
export const intentRow = (workflowId: string, delegationId = 'main.1') => ({
  workflowId,
  delegationId,
  step: 'main',
  kind: 'step',
  attempt: '1',
  agentCardUrl: 'http://agent.example/.well-known/agent-card.json',
  messageId: `m-${workflowId}`,
  requestedContextId: `c-${workflowId}`,
  state: 'INTENT',
  message: JSON.stringify({ parts: [{ text: 'book a flight' }] }),
  createdAt: '1000',
  updatedAt: '1000',
  version: '1',
});

/** A journal holding one RUNNING workflow whose delegation main.1 is in INTENT, and that record as read back. */
export interface JournalWithIntent {
  journal: Journal;
  ref: DelegationRef;
  record: DelegationRecord;
}

/**
 * A `Journal` on `redis` under `prefix` (retention 60 s, its clock `now`, ms) holding workflow `workflowId` RUNNING
 * with delegation main.1 in INTENT (`intentRow`); returns it with the delegation's ref and record as read back.
 */
export async function journalWithIntent(redis: RedisClient, options: { prefix: string; workflowId: string; now: () => number }): Promise<JournalWithIntent> {
  const journal = new Journal(redis, { prefix: options.prefix, retentionMs: 60_000, now: options.now });
  const ref: DelegationRef = { workflowId: options.workflowId, delegationId: 'main.1' };
  await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId));
  return { journal, ref, record: (await journal.getDelegation(ref))! };
}

/**
 * Workflow `workflowId` RUNNING (with a one-step definition naming `card`) in `journal`, its delegation main.1 in
 * INTENT at fence 1 (`intentRow`): a row a test then drives through the journal's scripts.
 */
export async function runningIntent(journal: Journal, workflowId: string, card: string): Promise<DelegationRef> {
  const ref = { workflowId, delegationId: 'main.1' };
  const definition = JSON.stringify({ workflowId, steps: [{ name: 'main', agent: card, message: { text: 'x' } }] });
  await journal.createWorkflow(workflowId, { state: 'RUNNING', definition, createdAt: String(Date.now()) }, { ...intentRow(workflowId), agentCardUrl: card, fence: '1' });
  return ref;
}

/**
 * A producer on `prefix` for the tests of a file (created before them, closed after them), connected before the first
 * test runs: `producer()` and its `journal()`.
 */
export function useConnectedProducer(redisServer: () => { url: string }, prefix: string): { producer: () => Producer; journal: () => Journal } {
  let producer: Producer | undefined;
  beforeAll(async () => {
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const journal = producer.journal;
    await eventually(() => journal.getWorkflow('none').then(() => true, () => false), 'the producer connected', 10_000);
  });
  afterAll(async () => {
    await producer?.close();
  });
  return { producer: () => producer!, journal: () => producer!.journal };
}

/** HGETALL calls the Redis server of `redis` has run so far (clients and scripts), from INFO commandstats. */
export async function hgetallCalls(redis: RedisClient): Promise<number> {
  const info = await redis.info('commandstats');
  return Number(/cmdstat_hgetall:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

/** What `agentWorkflowRows` journaled: a producer, a journal on a connection of the test's own, the step's ref. */
export interface AgentWorkflowRows {
  producer: Producer;
  journal: Journal;
  ref: DelegationRef;
}

/**
 * Workflow `workflowId` RUNNING with one step `main` delegated to the agent at `cardUrl`, its delegation main.1 in
 * INTENT (`intentRow`, created now), journaled on a connection of the test's own (as the producer and a push route
 * would leave the rows); a producer on `prefix` beside it. `keep` closes the producer and the connection after the test.
 */
export async function agentWorkflowRows(options: { redisUrl: string; prefix: string; workflowId: string; cardUrl: string; keep: (...closables: { close(): Promise<unknown> }[]) => void }): Promise<AgentWorkflowRows> {
  const { redisUrl, prefix, workflowId, cardUrl } = options;
  const producer = createProducer({ redis: redisUrl, addressPolicy: { allowLoopback: true }, prefix });
  const client = createRedisClient(redisUrl);
  const journal = new Journal(client, { prefix, retentionMs: 60_000, now: Date.now });
  options.keep(producer, { close: async () => void (await client.quit()) });
  const now = String(Date.now());
  const definition = JSON.stringify({ workflowId, steps: [{ name: 'main', agent: cardUrl, message: { text: 'book a flight' } }] });
  await journal.createWorkflow(workflowId, { state: 'RUNNING', definition, createdAt: now }, { ...intentRow(workflowId), agentCardUrl: cardUrl, createdAt: now, updatedAt: now });
  return { producer, journal, ref: { workflowId, delegationId: 'main.1' } };
}
