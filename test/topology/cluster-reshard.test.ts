/**
 * A live Redis Cluster reshard (always on a local three-master cluster, whatever DA2A_TEST_REDIS says): while an
 * agent streams WORKING updates and artifacts, the hash slot of the workflow's keys (`{wf:<id>}`), or of the
 * queues' prefix (`{<prefix>}`), moves to another master by the protocol `redis-cli --cluster reshard` uses
 * (IMPORTING/MIGRATING, MIGRATE in batches, SETSLOT NODE), with pauses so that the slot stays half moved while
 * the fleet writes to it (ASK and TRYAGAIN, answered inside ioredis; the refusal gate past its redirections).
 * Nothing may be lost or sent twice: the delegation completes, the agent saw one SendMessage, the journal record
 * and every artifact are read back from the slot's new master, and no job failed for good.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { ALL_QUEUES, queuePrefix } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import type { Step } from '../harness/agent-behaviours.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { startTestFleet } from '../harness/fleet.ts';
import { settleWorkflow, stuckIndexEntries, summary } from '../harness/invariants.ts';
import { keySlot, migrateSlot, slotOwnerPort, startRedisCluster, type RedisClusterHandle, type SlotMigration } from '../harness/redis-cluster.ts';

/** WORKING updates (each with its own artifact) the agent streams while the slot is half moved. */
const UPDATES = 6;
/** Pause between the agent's updates (ms). */
const UPDATE_EVERY_MS = 150;
/** How long the slot stays half moved after each step of the migration (ms). */
const MIGRATION_PAUSE_MS = 300;

/** A signal a test resolves once; the agent's side effects await it. */
interface Signal {
  promise: Promise<void>;
  resolve(): void;
}
function signal(): Signal {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/** Where the agents' executions wait: streaming (`working`), the slot half moved (`split`), the slot moved (`moved`). */
let phase = { working: signal(), split: signal(), moved: signal() };

/**
 * WORKING, then (once the slot is half moved) `UPDATES` WORKING updates with one artifact each, then (once the slot
 * moved) a last update, a last artifact and COMPLETED: every kind of journal write lands before, during and after.
 */
function streamsThroughTheMove(): Step[] {
  const steps: Step[] = [{ state: 'WORKING', text: 'started' }, { sideEffect: () => phase.working.resolve() }, { sideEffect: () => phase.split.promise }];
  for (let index = 0; index < UPDATES; index++) {
    steps.push({ delayMs: UPDATE_EVERY_MS }, { state: 'WORKING', text: `update ${index}` }, { artifact: { artifactId: `part-${index}`, text: `part ${index}`, lastChunk: true } });
  }
  steps.push({ sideEffect: () => phase.moved.promise }, { state: 'WORKING', text: 'finishing' }, { artifact: { artifactId: 'part-last', text: 'last part', lastChunk: true } }, { state: 'COMPLETED' });
  return steps;
}
const EXPECTED_ARTIFACTS = [...Array.from({ length: UPDATES }, (_, index) => `part-${index}`), 'part-last'].sort();

let cluster: RedisClusterHandle;
let agent: DemoAgentHandle;
let prefixCount = 0;

beforeAll(async () => {
  cluster = await startRedisCluster();
  agent = await startDemoAgent({ behaviour: streamsThroughTheMove });
});
afterAll(async () => {
  await agent?.close();
  await cluster?.stop();
});

/** A producer and an in-process fleet on a fresh prefix; `close()` ends both. */
async function startStack(): Promise<{ prefix: string; producer: Producer; fleet: Fleet; close(): Promise<void> }> {
  const prefix = `reshard${++prefixCount}`;
  phase = { working: signal(), split: signal(), moved: signal() };
  const producer = createProducer({ redis: cluster.url, addressPolicy: { allowLoopback: true }, prefix });
  const fleet = await startTestFleet({ redisUrl: cluster.url, prefix });
  return {
    prefix,
    producer,
    fleet,
    async close() {
      await fleet.close();
      await producer.close();
    },
  };
}

/** Runs `migrateSlot` with the test's pauses and batch size, resolving the agents' `split` signal on the way. */
const migrateWhileStreaming = (slot: number, batchSize: number): Promise<SlotMigration> =>
  migrateSlot(cluster, slot, { batchSize, pauseMs: MIGRATION_PAUSE_MS, onSplit: () => phase.split.resolve() });

/** Keys of `slot` on the master at `port` (`CLUSTER COUNTKEYSINSLOT`, asked of that master itself). */
async function keysInSlotOn(port: number, slot: number): Promise<number> {
  const node = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 3 });
  try {
    return Number(await node.call('CLUSTER', 'COUNTKEYSINSLOT', slot));
  } finally {
    node.disconnect();
  }
}

/** Jobs that failed for good, by queue (only queues with some). */
async function failedJobs(fleet: Fleet): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const name of ALL_QUEUES) {
    const failed = (await fleet.context.queues[name].getJobCounts('failed')).failed ?? 0;
    if (failed > 0) counts[name] = failed;
  }
  return counts;
}

describe('Redis Cluster reshard under a streaming delegation', () => {
  it("the workflow's slot moves to another master mid-stream: COMPLETED, one SendMessage, the record and every artifact on the new master", async () => {
    const stack = await startStack();
    try {
      const before = agent.receivedMessages.length;
      const { id, messageId } = await stack.producer.delegate({ agent: agent.cardUrl, text: 'stream through a reshard', idempotencyKey: 'reshard-journal' });
      const slot = await keySlot(cluster, stack.producer.journal.keys.workflow(id));
      await phase.working.promise;
      // Batches of two keys: the workflow's keys stay split between the masters for a few pauses.
      const migration = await migrateWhileStreaming(slot, 2);
      phase.moved.resolve();
      expect(migration.keysMoved).toBeGreaterThan(0);
      expect(await slotOwnerPort(cluster, slot)).toBe(migration.toPort);

      const view = await settleWorkflow(stack.producer, id, 40_000);
      expect(view.state, JSON.stringify(summary(view))).toBe('COMPLETED');
      const attempt = view.steps[0]!.attempts[0]!;
      expect(view.steps[0]!.attempts).toHaveLength(1);
      expect(attempt.messageId).toBe(messageId);
      expect(agent.sendMessageCount(messageId)).toBe(1);
      expect(agent.receivedMessages.length - before).toBe(1);
      expect(attempt.artifacts.map((artifact) => artifact.artifactId).sort()).toEqual(EXPECTED_ARTIFACTS);
      for (const artifact of attempt.artifacts) expect(artifact.parts.map((part) => part.text).join(''), artifact.artifactId).toBe(artifact.artifactId === 'part-last' ? 'last part' : artifact.artifactId.replace('-', ' '));

      // The record lives on the slot's new master only, and reads back whole through a fresh producer.
      expect(await keysInSlotOn(migration.fromPort, slot)).toBe(0);
      expect(await keysInSlotOn(migration.toPort, slot)).toBeGreaterThan(0);
      const reader = createProducer({ redis: cluster.url, addressPolicy: { allowLoopback: true }, prefix: stack.prefix });
      try {
        const reread = await reader.get(id);
        expect(reread.state).toBe('COMPLETED');
        expect(reread.steps[0]!.attempts[0]!.artifacts.map((artifact) => artifact.artifactId).sort()).toEqual(EXPECTED_ARTIFACTS);
      } finally {
        await reader.close();
      }
      await expect.poll(() => stuckIndexEntries(stack.producer), { timeout: 15_000 }).toEqual([]);
      expect(await failedJobs(stack.fleet)).toEqual({});
    } finally {
      await stack.close();
    }
  }, 90_000);

  it("the queues' slot ({prefix}) moves while delegations stream and new ones start: all COMPLETED, each sent once, no job failed for good", async () => {
    const stack = await startStack();
    try {
      const slot = await keySlot(cluster, queuePrefix(stack.prefix));
      const first = await Promise.all(
        Array.from({ length: 4 }, (_, index) => stack.producer.delegate({ agent: agent.cardUrl, text: `before the move ${index}`, idempotencyKey: `reshard-queue-${index}` })),
      );
      await phase.working.promise;
      // Delegations started while the queues' keys are split between two masters: a refused start is retried
      // (the idempotency key makes the retry the same delegation).
      const later: Promise<{ id: string; messageId: string }>[] = [];
      const migration = await migrateSlot(cluster, slot, {
        batchSize: 5,
        pauseMs: MIGRATION_PAUSE_MS,
        onSplit: () => {
          phase.split.resolve();
          for (let index = 0; index < 3; index++) later.push(delegateWithRetries(stack.producer, `reshard-queue-late-${index}`));
        },
      });
      phase.moved.resolve();
      expect(migration.keysMoved).toBeGreaterThan(0);
      expect(await slotOwnerPort(cluster, slot)).toBe(migration.toPort);

      const all = [...first, ...(await Promise.all(later))];
      const views = await Promise.all(all.map(({ id }) => settleWorkflow(stack.producer, id, 40_000)));
      for (const view of views) expect(view.state, JSON.stringify(summary(view))).toBe('COMPLETED');
      for (const [index, view] of views.entries()) {
        expect(view.steps[0]!.attempts, view.workflowId).toHaveLength(1);
        expect(agent.sendMessageCount(all[index]!.messageId), view.workflowId).toBe(1);
        expect(view.steps[0]!.attempts[0]!.artifacts.map((artifact) => artifact.artifactId).sort()).toEqual(EXPECTED_ARTIFACTS);
      }
      expect(await keysInSlotOn(migration.fromPort, slot)).toBe(0);
      expect(await keysInSlotOn(migration.toPort, slot)).toBeGreaterThan(0);
      await expect.poll(() => stuckIndexEntries(stack.producer), { timeout: 15_000 }).toEqual([]);
      expect(await failedJobs(stack.fleet)).toEqual({});
    } finally {
      await stack.close();
    }
  }, 90_000);
});

/** `producer.delegate`, tried again (at most 50 times, 200 ms apart) while Redis answers 503 (slots in motion). */
async function delegateWithRetries(producer: Producer, idempotencyKey: string): Promise<{ id: string; messageId: string }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await producer.delegate({ agent: agent.cardUrl, text: idempotencyKey, idempotencyKey });
    } catch (error) {
      if (attempt >= 50 || (error as { code?: string }).code !== 'REDIS_UNAVAILABLE') throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
