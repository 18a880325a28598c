/**
 * The kind "a look decided from an old row moves an entry a person's resolution just put back": the reconcile of a
 * workflow waiting for a person (NEEDS_ATTENTION) moves its `*` entry an hour out. A look that read the row just
 * before a person resolved it moved the entry after the resolution had put it at now, so the resolved workflow's
 * safety net (its decide job lost) waited an hour. The look now reads the version again after its move
 * (`lookAgainLater`). Real Redis, a real fleet's journal.
 */
import { describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet, WorkerContext } from '@durable-a2a/workers';
import { ATTENTION_LOOK_MS, lookAgainLater, reconcileWorkflow } from '../../packages/workers/src/workflow/recover.ts';
import { startTestFleet } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;

async function setUp(): Promise<{ producer: Producer; fleet: Fleet }> {
  const prefix = `attention-look-${++counter}`;
  const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  // Only the notify queue: the looks and resolutions are the test's own; a fleet that sent the workflow's step (to
  // an unreachable agent) and decided it would move the entry itself, by its own right, in the middle of an order.
  const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 600_000, queues: ['notify'] });
  keep(producer, fleet);
  return { producer, fleet };
}

/** A workflow waiting for a person, its step's entry gone (as a deciding worker leaves it); its row's version. */
async function waitingWorkflow(producer: Producer): Promise<{ workflowId: string; version: number }> {
  const workflowId = `wait-${++counter}`;
  await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: 'http://127.0.0.1:9/never', message: { text: 'go' } }] });
  const row = (await producer.journal.getWorkflow(workflowId))!;
  const attention = { code: 'NO_PROGRESS' as const, message: 'a person decides', delegationId: 'main.1', fromVersion: row.version };
  const version = await producer.journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention }, row.version);
  await producer.journal.removeFromIndex({ workflowId, delegationId: 'main.1' });
  return { workflowId, version };
}

/** A person's resolution as `resolve` writes it (the row back to RUNNING, the entry at now), its decide job lost. */
async function resolve(producer: Producer, workflowId: string, version: number): Promise<void> {
  await producer.journal.updateWorkflow(workflowId, { state: 'RUNNING' }, version);
  await producer.journal.addToIndex({ workflowId, delegationId: '*' }, Date.now());
}

describe('a look at a workflow waiting for a person does not hold back its resolution', () => {
  it('the case: a look decided from the row before the resolution leaves the entry due now', async () => {
    const { producer, fleet } = await setUp();
    const { workflowId, version } = await waitingWorkflow(producer);
    const entry = { workflowId, delegationId: '*' };
    // The look read the waiting row (version `version`); the person resolves; then the look moves the entry.
    await resolve(producer, workflowId, version);
    await lookAgainLater(fleet.context, workflowId, version, Date.now() + ATTENTION_LOOK_MS);
    expect(await producer.journal.nextCheckAt(entry)).toBeLessThanOrEqual(Date.now());
    // The reconcile it brings decides the resolved workflow.
    expect(await reconcileWorkflow(fleet.context, workflowId)).not.toBe('workflow-needs-attention');
  }, 60_000);

  it('a look at a row nobody changed still moves the entry out', async () => {
    const { producer, fleet } = await setUp();
    const { workflowId } = await waitingWorkflow(producer);
    expect(await reconcileWorkflow(fleet.context, workflowId)).toBe('workflow-needs-attention');
    expect(await producer.journal.nextCheckAt({ workflowId, delegationId: '*' })).toBeGreaterThan(Date.now() + 60_000);
  }, 60_000);

  it("every order of the look's move and read and the resolution's two writes: a resolved workflow's entry ends due now", async () => {
    const { producer, fleet } = await setUp();
    type Step = 'move' | 'read' | 'row' | 'entry';
    // Every interleaving of the look's two calls (in their order) with the resolution's two writes (in theirs).
    const orders: Step[][] = [];
    const weave = (look: Step[], resolution: Step[], order: Step[]) => {
      if (look.length === 0 && resolution.length === 0) orders.push(order);
      if (look.length > 0) weave(look.slice(1), resolution, [...order, look[0]!]);
      if (resolution.length > 0) weave(look, resolution.slice(1), [...order, resolution[0]!]);
    };
    weave(['move', 'read'], ['row', 'entry'], []);
    expect(orders).toHaveLength(6);
    for (const order of orders) {
      const { workflowId, version } = await waitingWorkflow(producer);
      // The look's journal: each of its calls waits until the order opens its gate, and says when it is done.
      const gates = new Map<Step, { open: () => void; opened: Promise<void>; done: Promise<void>; finish: () => void }>();
      for (const step of ['move', 'read'] as const) {
        let open!: () => void;
        let finish!: () => void;
        gates.set(step, { open: () => open(), opened: new Promise<void>((resolve) => (open = resolve)), done: new Promise<void>((resolve) => (finish = resolve)), finish: () => finish() });
      }
      const journal = fleet.context.journal;
      const gated =
        <A extends unknown[], R>(step: 'move' | 'read', call: (...args: A) => Promise<R>) =>
        async (...args: A): Promise<R> => {
          const gate = gates.get(step)!;
          await gate.opened;
          try {
            return await call(...args);
          } finally {
            gate.finish();
          }
        };
      const calls = { scheduleCheck: gated('move', journal.scheduleCheck.bind(journal)), getWorkflow: gated('read', journal.getWorkflow.bind(journal)) };
      const lookJournal = new Proxy(journal, { get: (target, name, receiver) => (name in calls ? calls[name as keyof typeof calls] : Reflect.get(target, name, receiver)) });
      const look = lookAgainLater({ ...fleet.context, journal: lookJournal } as WorkerContext, workflowId, version, Date.now() + ATTENTION_LOOK_MS);
      for (const step of order) {
        if (step === 'row') await producer.journal.updateWorkflow(workflowId, { state: 'RUNNING' }, version);
        else if (step === 'entry') await producer.journal.addToIndex({ workflowId, delegationId: '*' }, Date.now());
        else {
          gates.get(step)!.open();
          await gates.get(step)!.done;
        }
      }
      await look;
      expect(await producer.journal.nextCheckAt({ workflowId, delegationId: '*' }), order.join(', ')).toBeLessThanOrEqual(Date.now());
    }
  }, 120_000);
});
