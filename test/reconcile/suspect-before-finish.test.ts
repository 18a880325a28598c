/**
 * The kind "evidence that the work happened twice is lost": a suspect (a task a refused push showed holding our
 * message, noteSuspect-1.lua) noted after a worker read the row and before its terminal status. noteSuspect bumps no
 * version, so the worker's status change at the version it read got a change reply without `suspects`
 * (applyStatus-5.lua's FIELDS_UNVERSIONED lacked it); the settle decided the workflow from that record (it waits only
 * for the suspects it sees), the finishing decision compacted the row, and the suspect was dropped unread: a task
 * holding our message too never read, no DUPLICATE_TASK, nobody told. Now the change reply carries the suspects, the
 * settle waits for the reconciler to read them, and the holder is noted on the finished row.
 * Real redis-server, scripted agent, the fleet's own `apply` driven in the window's order (a fleet cannot hit it on
 * purpose), then a real fleet reads the suspect.
 */
import { describe, expect, it } from 'vitest';
import { apply } from '../../packages/workers/src/delegation/apply.ts';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { agentWorkflowRows } from '../harness/journal-rows.ts';
import { startSuspectsAgent } from '../harness/holders.ts';

let counter = 0;

describe('a suspect noted between the last read of a row and its terminal status', () => {
  const redisServer = useRedisServer();
  const keep = closeKeptAfterEach();

  it('T2 (holding our message) noted after the read: the settle waits, T2 is read, DUPLICATE_TASK noted, the workflow then completes', async () => {
    const prefix = `suspect-window${++counter}`;
    const workflowId = `${prefix}-w`;
    const messageId = `m-${workflowId}`;
    const agent = await startSuspectsAgent(['T2'], new Set(['T2']), messageId);
    keep(agent);
    const { producer, journal, ref } = await agentWorkflowRows({ redisUrl: redisServer().url, prefix, workflowId, cardUrl: agent.cardUrl, keep });
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: 'T1', contextId: 'ctx-T1', agentCardUrl: agent.cardUrl });
    // A fleet on the notify queue only: its context runs the worker's `apply`; nothing else touches the row.
    const deciding = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 600_000, queues: ['notify'] });
    keep(deciding);

    // The worker reads the row; then a refused push names T2 (kept); then the worker's read of T1 says COMPLETED.
    const held = (await journal.getDelegation(ref))!;
    expect(await journal.noteSuspect(ref, 'T2')).toBe('kept');
    const completed = { id: 'T1', contextId: 'ctx-T1', status: { state: 'TASK_STATE_COMPLETED' as const }, artifacts: [{ artifactId: 'a1', parts: [{ text: 'booked' }] }] };
    await apply(deciding.context, held, { kind: 'task-read', task: completed, call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'the suspect window', cycle: false }, { source: 'reconcile' });

    // The settle saw the suspect: the workflow waits for its read (before: COMPLETED at once, T2 dropped unread).
    expect((await journal.getWorkflow(workflowId))?.state).toBe('RUNNING');
    const finished = (await journal.getDelegation(ref))!;
    expect(finished.state).toBe('COMPLETED');
    expect(finished.suspects).toBe(JSON.stringify(['T2']));

    // A fleet reads T2, notes it on the finished row, and the workflow decides.
    keep(await startTestFleet({ redisUrl: redisServer().url, prefix }));
    await eventually(async () => (await producer.get(workflowId)).state === 'COMPLETED', 'the workflow completed', 30_000);
    const row = (await journal.getDelegation(ref))!;
    expect(agent.requests.some((request) => request.method === 'GetTask' && (request.params as { id?: unknown }).id === 'T2')).toBe(true);
    expect(row.state).toBe('COMPLETED');
    expect(row.protocolError).toMatchObject({ code: 'DUPLICATE_TASK' });
    expect(row.protocolError?.message).toContain('T2');
    expect(row.protocolError?.message).toContain('T1');
  }, 60_000);
});
