/**
 * The reconciler's check of a running workflow (`<workflowId>|*`, every 15–45 s while its steps run) decides "wait"
 * again from the versions alone when none moved since its last "wait" here (packages/workers/src/workflow/wait-memory.ts):
 * no row read, nothing parsed. A change of anything the decision reads moves a version (every journal script:
 * packages/shared/test/decision-versions.test.ts), and the check then reads and decides in full, as before.
 * Case: a followed step, checked twice (the second reads no row), then a journal change the decision does not read
 * and two it does (a row's, the workflow's). Property: after any sequence of journal changes, the check's outcome is the full decision's
 * (`decideWithoutRegistry` of the rows read now), and it is the cheap one whenever no version moved.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Fleet } from '@durable-a2a/workers';
import type { Producer } from '@durable-a2a/producer';
import type { DelegationRecord } from '@durable-a2a/shared';
import { reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { decideWithoutRegistry } from '../../packages/workers/src/workflow/advance.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { commandsDuring } from '../harness/commands-during.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { startLongTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const keep = closeKeptAfterEach();

/** A running one-step workflow whose step the rig's follower follows (WORKING). */
async function followedWorkflow(producer: Producer, cardUrl: string, text: string): Promise<{ workflowId: string }> {
  const { id } = await producer.delegate({ agent: cardUrl, text });
  await eventually(async () => (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))?.state === 'WORKING', 'the step is followed', 20_000);
  return { workflowId: id };
}

/** An agent of long tasks, a producer, a fleet that follows them, and a second fleet that runs no queue (the checker), on `prefix`. */
async function startRig(prefix: string): Promise<{ agent: Awaited<ReturnType<typeof startLongTasks>>['agent']; producer: Producer; checker: Fleet }> {
  const { agent, producer } = await startLongTasks(redisServer().url, prefix);
  const fleets = await Promise.all([['send', 'follow'] as const, [] as const].map((queues) => startTestFleet({ redisUrl: redisServer().url, prefix, queues: [...queues], reconcileIntervalMs: 600_000 })));
  keep(agent, producer, ...fleets);
  return { agent, producer, checker: fleets[1]! };
}

/** The decision a full read makes now (the workflow row and every delegation row, as `advanceWorkflow` reads them). */
async function fullDecision(producer: Producer, workflowId: string): Promise<string> {
  const workflow = (await producer.journal.getWorkflow(workflowId))!;
  const ids = await producer.journal.delegationIds(workflowId);
  const rows = (await Promise.all(ids.map((delegationId) => producer.journal.getDelegation({ workflowId, delegationId })))).filter((row): row is DelegationRecord => row !== undefined);
  return decideWithoutRegistry(workflow, rows).kind;
}

describe("a running workflow's check remembers its last wait at the rows' versions", () => {
  it('checked again with nothing moved: waits without reading a row; a row or the workflow changed: reads and decides in full', async () => {
    const { agent, producer, checker } = await startRig('wait-memory');
    const { workflowId } = await followedWorkflow(producer, agent.cardUrl, 'a long job');
    const ref = { workflowId, delegationId: 'main.1' };
    const check = () => reconcileDelegation(checker.context, { workflowId, delegationId: '*' }, undefined);

    expect(await check()).toBe('workflow-wait');
    const again = await rowReadsDuring(check);
    expect(again.result).toBe('workflow-wait-unchanged');
    expect(again.reads).toEqual([]);

    // A change the decision does not read, without a version bump (noteNotFound-1.lua): still the cheap wait.
    await producer.journal.noteNotFound(ref);
    expect(await check()).toBe('workflow-wait-unchanged');
    // A change of the row (its effect, recordEffect-1.lua bumps the version): read and decided in full.
    expect(await producer.journal.recordEffect(ref, 'unknown', { why: 'test' })).toBe(true);
    const full = await rowReadsDuring(check);
    expect(full.result).toBe('workflow-wait');
    expect(full.reads.length).toBeGreaterThan(0);
    expect(await check()).toBe('workflow-wait-unchanged');
    // A person's cancel (the workflow's version): read and decided in full.
    await producer.journal.updateWorkflow(workflowId, { cancelRequested: true });
    const expected = await fullDecision(producer, workflowId);
    const canceled = await rowReadsDuring(check);
    expect(canceled.result).toBe(`workflow-${expected}`);
    expect(canceled.reads.length).toBeGreaterThan(0);
  }, 60_000);

  it('property: after any journal changes the check decides as a full read does, and reads no row when no version moved', async () => {
    const { agent, producer, checker } = await startRig('wait-memory-property');
    /** Journal changes on a running workflow's followed row and on the workflow: whether each moves a version. */
    const changes = {
      notFound: { moves: false, run: (workflowId: string) => producer.journal.noteNotFound({ workflowId, delegationId: 'main.1' }) },
      noProgress: { moves: false, run: (workflowId: string) => producer.journal.noteNoProgress({ workflowId, delegationId: 'main.1' }, 'mark', 'quiet') },
      suspect: { moves: false, run: (workflowId: string) => producer.journal.noteSuspect({ workflowId, delegationId: 'main.1' }, 'task-elsewhere') },
      effect: { moves: true, run: (workflowId: string) => producer.journal.recordEffect({ workflowId, delegationId: 'main.1' }, 'unknown', { why: 'property' }) },
      history: { moves: true, run: (workflowId: string) => producer.journal.updateWorkflow(workflowId, {}) },
      cancel: { moves: true, run: (workflowId: string) => producer.journal.updateWorkflow(workflowId, { cancelRequested: true }) },
    } as const;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.constantFrom(...(Object.keys(changes) as (keyof typeof changes)[])), { maxLength: 3 }), { minLength: 1, maxLength: 4 }), async (rounds) => {
        const { workflowId } = await followedWorkflow(producer, agent.cardUrl, `job ${runs++}`);
        const check = () => reconcileDelegation(checker.context, { workflowId, delegationId: '*' }, undefined);
        let last = await check();
        expect(last).toBe('workflow-wait');
        for (const round of rounds) {
          for (const change of round) await changes[change].run(workflowId);
          const expected = await fullDecision(producer, workflowId);
          const outcome = await check();
          // The cheap wait only where the full read decides wait, and always when nothing moved after a wait.
          if (outcome === 'workflow-wait-unchanged') expect(expected).toBe('wait');
          else expect(outcome).toBe(`workflow-${expected}`);
          const moved = round.some((change) => changes[change].moves);
          if (!moved && last.startsWith('workflow-wait')) expect(outcome).toBe('workflow-wait-unchanged');
          last = outcome;
        }
      }),
      { numRuns: 12 },
    );
  }, 240_000);
});

/** Runs `run` and returns its result with the HGETALLs it sent (the full read's rows). */
async function rowReadsDuring<T>(run: () => Promise<T>): Promise<{ result: T; reads: string[][] }> {
  const { result, seen } = await commandsDuring(redisServer().url, redis(), (args) => args[0]?.toLowerCase() === 'hgetall', run);
  return { result, reads: seen };
}
