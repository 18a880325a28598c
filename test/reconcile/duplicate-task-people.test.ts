/**
 * The kind "evidence that the work happened twice is lost or nobody hears of it", on a FINISHED attempt whose suspect
 * (a task a refused push showed holding our message) is read after it finished and holds our message too
 * (noteDuplicateTask-1.lua, DUPLICATE_TASK):
 * - nobody heard of it: the note sat in the row's `protocolError` (the API's JSON) and a log line; no event, no
 *   history entry, no metric. Now the workflow's history has a `duplicate-task` entry naming both tasks (every view,
 *   with a summary), a `duplicate.task` notification is emitted (a retried read emits the same event id) and
 *   `durable_a2a_duplicate_tasks_total` counts it; the attempt's state and the workflow's outcome stand.
 * - an earlier protocol error was overwritten: a FOREIGN_TASK noted while the attempt ran was replaced by the
 *   DUPLICATE_TASK. Now the first ones are kept (`earlierProtocolErrors`, lua/includes/protocolErrors.lua), for
 *   noteProtocolError-1.lua and noteDuplicateTask-1.lua alike.
 * Real redis-server, real fleet and notify queue, scripted agent, a real webhook receiver; rows journaled directly.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EARLIER_PROTOCOL_ERRORS_MAX, type RecordedError } from '@durable-a2a/shared';
import { useRedisServer, useRedisClient } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { agentWorkflowRows, journalWithIntent } from '../harness/journal-rows.ts';
import { startSuspectsAgent } from '../harness/holders.ts';
import { startWebhookReceiver } from '../harness/webhook-receiver.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const FOREIGN: RecordedError = { code: 'FOREIGN_TASK', message: 'GetTask about T1 answered task T9', retryable: false };
let counter = 0;

describe('a duplicate task found after the attempt finished reaches a person; earlier evidence is kept', () => {
  const redisServer = useRedisServer();
  const redis = useRedisClient(redisServer);
  const keep = closeKeptAfterEach();

  /**
   * One workflow whose only step finished COMPLETED on task T1 while `suspects` waited (`holding`: those whose history
   * holds our message; `foreign`: a FOREIGN_TASK noted while it ran), then a fleet with a notification receiver.
   */
  async function scene(suspects: readonly string[], holding: ReadonlySet<string>, foreign: boolean) {
    const prefix = `duplicate-people${++counter}`;
    const workflowId = `${prefix}-w`;
    const messageId = `m-${workflowId}`;
    const agent = await startSuspectsAgent(suspects, holding, messageId);
    const receiver = await startWebhookReceiver(SECRET);
    receiver.answerWith(() => ({ kind: 'accept' }));
    keep(agent, receiver);
    const { producer, journal, ref } = await agentWorkflowRows({ redisUrl: redisServer().url, prefix, workflowId, cardUrl: agent.cardUrl, keep });
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: 'T1', contextId: 'ctx-T1', agentCardUrl: agent.cardUrl });
    if (foreign) expect(await journal.noteProtocolError(ref, FOREIGN)).toBe(true);
    for (const id of suspects) expect(await journal.noteSuspect(ref, id)).toBe('kept');
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'COMPLETED', taskId: 'T1', result: { booked: true } });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, notify: { secret: SECRET, url: receiver.url } });
    keep(fleet);
    // The start-up sweep reconciles the finished row at once: its suspects read, then the workflow decides.
    await eventually(async () => (await producer.get(workflowId)).state !== 'RUNNING', 'the workflow decided', 30_000);
    const events = async (count: number) =>
      eventually(
        async () => {
          const bodies = receiver.received.map((request) => JSON.parse(request.body) as { id: string; type: string; delegationId?: string; data: Record<string, unknown> });
          const duplicates = bodies.filter((body) => body.type === 'duplicate.task');
          return bodies.some((body) => body.type === 'workflow.finished') && new Set(duplicates.map((body) => body.id)).size >= count ? duplicates : undefined;
        },
        `${count} duplicate.task events and workflow.finished`,
        30_000,
      );
    const counted = (await fleet.context.metrics.duplicateTasks.get()).values.reduce((sum, value) => sum + value.value, 0);
    return { producer, workflowId, row: (await journal.getDelegation(ref))!, events, counted, view: await producer.get(workflowId) };
  }

  it('the case: T2 holds our message: a duplicate-task history entry, a duplicate.task event and the metric; COMPLETED stands', async () => {
    const { row, events, counted, view } = await scene(['T2'], new Set(['T2']), false);
    expect(view.state).toBe('COMPLETED');
    expect(row.state).toBe('COMPLETED');
    expect(row.protocolError?.code).toBe('DUPLICATE_TASK');
    const entries = view.history.filter((entry) => entry.kind === 'duplicate-task');
    expect(entries).toEqual([expect.objectContaining({ delegationId: 'main.1', taskId: 'T1', otherTaskId: 'T2', state: 'COMPLETED' })]);
    expect(entries[0]!.summary).toMatch(/T2.*T1.*twice/);
    const [event] = await events(1);
    expect(event).toMatchObject({ type: 'duplicate.task', delegationId: 'main.1', data: { step: 'main', state: 'COMPLETED', taskId: 'T1', otherTaskId: 'T2' } });
    expect(counted).toBe(1);
  }, 60_000);

  it('the case: a FOREIGN_TASK noted while the attempt ran is kept beside the DUPLICATE_TASK (before: overwritten)', async () => {
    const { row } = await scene(['T2'], new Set(['T2']), true);
    expect(row.protocolError?.code).toBe('DUPLICATE_TASK');
    expect(row.protocolErrorCount).toBe(2);
    expect(row.earlierProtocolErrors).toEqual([expect.objectContaining(FOREIGN)]);
  }, 60_000);

  it('property: any suspects, any holders, with or without an earlier FOREIGN_TASK: one entry, event and count per holder; the outcome stands', async () => {
    const scenes = fc
      .uniqueArray(fc.constantFrom('T2', 'T3', 'T4'), { minLength: 1, maxLength: 3 })
      .chain((suspects) => fc.tuple(fc.constant(suspects), fc.subarray(suspects), fc.boolean()));
    await fc.assert(
      fc.asyncProperty(scenes, async ([suspects, holders, foreign]) => {
        const { row, events, counted, view } = await scene(suspects, new Set(holders), foreign);
        expect(view.state).toBe('COMPLETED');
        expect(row.state).toBe('COMPLETED');
        expect(counted).toBe(holders.length);
        expect(view.history.filter((entry) => entry.kind === 'duplicate-task').map((entry) => entry.otherTaskId).sort()).toEqual([...holders].sort());
        const duplicates = await events(holders.length);
        expect([...new Set(duplicates.map((event) => event.data.otherTaskId))].sort()).toEqual([...holders].sort());
        expect(row.protocolErrorCount).toBe(holders.length + (foreign ? 1 : 0));
        // The first evidence stays first: the FOREIGN_TASK, kept when a DUPLICATE_TASK came after it.
        if (foreign) expect(holders.length > 0 ? row.earlierProtocolErrors?.[0] : row.protocolError).toMatchObject(FOREIGN);
        if (holders.length > 0) expect(row.protocolError?.code).toBe('DUPLICATE_TASK');
      }),
      { numRuns: 3, examples: [[[['T2', 'T3'], [], true]], [[['T3', 'T2'], ['T2', 'T3'], true]], [[['T4'], ['T4'], false]]] },
    );
  }, 300_000);

  it('property (journal): whatever protocol errors are noted, the latest is `protocolError`, the first ones before it are kept in order, all are counted', async () => {
    const codes = fc.array(fc.constantFrom<RecordedError['code']>('FOREIGN_TASK', 'TASK_BOUND_ELSEWHERE', 'FOREIGN_TASK'), { maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(codes, fc.constantFrom('T2', 'T3'), async (noted, other) => {
        const { journal, ref } = await journalWithIntent(redis(), { prefix: `protocol-errors${++counter}`, workflowId: `w-${counter}`, now: Date.now });
        const errors: RecordedError[] = noted.map((code, index) => ({ code, message: `error ${index}`, retryable: false }));
        for (const error of errors) expect(await journal.noteProtocolError(ref, error)).toBe(true);
        await journal.applyStatus(ref, { mode: 'outcome', state: 'FAILED', error: { code: 'DEADLINE_EXCEEDED', message: 'ended' } });
        expect(await journal.noteDuplicateTask(ref, [undefined, other])).toBe('noted');
        const row = (await journal.getDelegation(ref))!;
        const all = [...errors, expect.objectContaining({ code: 'DUPLICATE_TASK' })];
        expect(row.state).toBe('FAILED');
        expect(row.protocolErrorCount).toBe(all.length);
        expect(row.protocolError?.code).toBe('DUPLICATE_TASK');
        const earlier = all.slice(0, Math.min(all.length - 1, EARLIER_PROTOCOL_ERRORS_MAX));
        if (earlier.length === 0) expect(row.earlierProtocolErrors).toBeUndefined();
        else expect(row.earlierProtocolErrors).toEqual(earlier.map((error) => expect.objectContaining(error)));
      }),
      { numRuns: 40, examples: [[['FOREIGN_TASK'], 'T2'], [[], 'T2'], [['FOREIGN_TASK', 'TASK_BOUND_ELSEWHERE', 'FOREIGN_TASK', 'FOREIGN_TASK', 'TASK_BOUND_ELSEWHERE', 'FOREIGN_TASK'], 'T3']] },
    );
  }, 120_000);
});
