/**
 * The kind "evidence that the work may have happened twice, never read or never told", after an attempt finished:
 * - a push naming another task that holds our message, arriving after the row finished, was refused and nothing read
 *   it (the push route's `suspectOf` named no suspect for a finished row; noteSuspect-1.lua refused finished rows). Now
 *   it is kept and read (GetTask) like one noted before the finish: a DUPLICATE_TASK note, a `duplicate-task` history
 *   entry and a `duplicate.task` event.
 * - suspects lost on a finished row (not kept, or never read to a conclusion) were a log line only. Now a person is told
 *   once: a `duplicate-unchecked` history entry, a `duplicate.unchecked` event and
 *   `durable_a2a_duplicate_tasks_total{finding="unchecked"}` (noteSuspectsUnchecked-1.lua).
 * Real redis-server, real fleet, push route and notify queue, scripted agents, a real webhook receiver.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { SUSPECT_TASK_ID_MAX } from '@durable-a2a/shared';
import { useRedisServer, useRedisClient } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { agentWorkflowRows, journalWithIntent } from '../harness/journal-rows.ts';
import { holder, receivedOf, startSuspectsAgent, type Received } from '../harness/holders.ts';
import { startScriptedAgent, task, taskEvent } from '../harness/scripted-agent.ts';
import { getTaskCalls } from '../harness/push-scene.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
let counter = 0;

type Event = { id: string; type: string; delegationId?: string; data: Record<string, unknown> };
const eventsOf = (receiver: WebhookReceiver, type: string): Event[] => receiver.received.map((received) => JSON.parse(received.body) as Event).filter((event) => event.type === type);

describe('evidence of a task done twice after the attempt finished is read and told', () => {
  const redisServer = useRedisServer();
  const redis = useRedisClient(redisServer);
  const keep = closeKeptAfterEach();

  /**
   * A two-step workflow: `main` pushed at an agent that binds T1 (holding our message) and answers GetTask for T2
   * (`t2Holds`: its history holds our message, else another client's), then `later` at an agent whose task never ends,
   * so main.1's row stays (a finished workflow is compacted). The test pushes to main.1's webhook.
   */
  async function pushedScene(t2Holds: boolean) {
    const prefix = `dup-after-finish${++counter}-${Date.now()}`;
    const receiver = await startWebhookReceiver(SECRET);
    receiver.answerWith(() => ({ kind: 'accept' }));
    const app = startTestServer({ redisUrl: redisServer().url, prefix });
    const webhookUrl = `${await listenOnLoopback(app)}/v1/push`;
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    let received: Received | undefined;
    let t1Done = false;
    const agent = await startScriptedAgent({
      SendMessage: async (params) => {
        received ??= receivedOf(params);
        return { result: { task: holder('T1', 'WORKING', received) } };
      },
      SubscribeToTask: () => ({ sse: [taskEvent(holder('T1', 'WORKING', received!))], endAfter: 'hang' }),
      GetTask: async (params) => {
        const id = String(params.id);
        if (id === 'T1') return { result: holder('T1', t1Done ? 'COMPLETED' : 'WORKING', received!) };
        if (id === 'T2') return { result: holder('T2', 'WORKING', t2Holds ? received! : { ...received!, messageId: 'm-someone-else' }) };
        return { error: { code: -32001, message: 'Task not found' } };
      },
    });
    const later = await startScriptedAgent({
      SendMessage: async () => ({ result: { task: task('L1', 'WORKING', { contextId: 'ctx-L1' }) } }),
      SubscribeToTask: () => ({ sse: [taskEvent(task('L1', 'WORKING', { contextId: 'ctx-L1' }))], endAfter: 'hang' }),
      GetTask: async () => ({ result: task('L1', 'WORKING', { contextId: 'ctx-L1' }) }),
    });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, webhookUrl, notify: { secret: SECRET, url: receiver.url } });
    keep(fleet, { close: () => app.close() }, producer, agent, later, receiver);
    const workflowId = `wf-${prefix}`;
    await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'go' }, push: true }, { name: 'later', agent: later.cardUrl, message: { text: 'then' } }] });
    const ref = { workflowId, delegationId: 'main.1' };
    const row = async () => (await producer.journal.getDelegation(ref))!;
    await eventually(async () => (await row()).taskId === 'T1' && (await row()).state === 'WORKING', 'T1 bound', 20_000);
    const token = (await producer.journal.pushToken(ref))!;
    const messageId = (await row()).messageId;
    const push = async (body: unknown) => {
      const answered = await request(`${webhookUrl}/${workflowId}/main.1`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${token}`, 'content-type': 'application/a2a+json' } });
      await answered.body.text();
      return answered.statusCode;
    };
    /** Pushes T2 showing our message (what the route takes for a suspect), then waits until the workers read it. */
    const pushT2 = async () => {
      const before = getTaskCalls(agent, 'T2');
      const t2 = { task: { id: 'T2', contextId: received!.contextId, status: { state: 'TASK_STATE_WORKING' }, history: [{ role: 'ROLE_USER', messageId, parts: [{ text: 'go' }] }] } };
      expect(await push(t2)).toBe(403);
      await eventually(async () => getTaskCalls(agent, 'T2') > before && (await row()).suspects === undefined, 'T2 read by GetTask', 30_000);
    };
    /** Finishes T1 by a push of the whole COMPLETED task; waits until main.1 finished and `later` was sent. */
    const finishT1 = async () => {
      t1Done = true;
      expect(await push({ task: holder('T1', 'COMPLETED', received!) })).toBe(204);
      await eventually(async () => ['COMPLETED', 'AMBIGUOUS'].includes((await row()).state), 'main.1 finished', 30_000);
    };
    return { producer, workflowId, row, pushT2, finishT1, receiver, fleet, agent, later };
  }

  it('the case: a push of T2 holding our message after main.1 COMPLETED: GetTask T2, DUPLICATE_TASK, a duplicate-task entry and a duplicate.task event', async () => {
    const { producer, workflowId, row, pushT2, finishT1, receiver, later } = await pushedScene(true);
    await finishT1();
    await eventually(async () => later.count('SendMessage') > 0, 'the workflow went on to `later`', 30_000);
    await pushT2();
    const finished = await row();
    expect(finished.state).toBe('COMPLETED');
    expect(finished.protocolError?.code).toBe('DUPLICATE_TASK');
    const view = await producer.get(workflowId);
    expect(view.history.filter((entry) => entry.kind === 'duplicate-task')).toEqual([expect.objectContaining({ delegationId: 'main.1', taskId: 'T1', otherTaskId: 'T2', state: 'COMPLETED' })]);
    const [event] = await eventually(async () => (eventsOf(receiver, 'duplicate.task').length > 0 ? eventsOf(receiver, 'duplicate.task') : undefined), 'duplicate.task', 30_000);
    expect(event).toMatchObject({ delegationId: 'main.1', data: { step: 'main', state: 'COMPLETED', taskId: 'T1', otherTaskId: 'T2' } });
  }, 90_000);

  it('property: T2 pushed before or after main.1 finished, holding our message or not: always read; a holder is told (AMBIGUOUS before, DUPLICATE_TASK after), a non-holder changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('before', 'after'), fc.boolean(), async (arrival, t2Holds) => {
        const { producer, workflowId, row, pushT2, finishT1, receiver } = await pushedScene(t2Holds);
        if (arrival === 'before') await pushT2();
        await finishT1();
        if (arrival === 'after') await pushT2();
        const finished = await row();
        const entries = (await producer.get(workflowId)).history.filter((entry) => entry.kind === 'duplicate-task');
        if (!t2Holds) {
          expect(finished.state).toBe('COMPLETED');
          expect(finished.protocolError?.code).not.toBe('DUPLICATE_TASK');
          expect(entries).toEqual([]);
        } else if (arrival === 'before') {
          expect(finished.state).toBe('AMBIGUOUS');
          expect(finished.error?.message).toContain('T2');
        } else {
          expect(finished.state).toBe('COMPLETED');
          expect(entries.map((entry) => entry.otherTaskId)).toEqual(['T2']);
          await eventually(async () => eventsOf(receiver, 'duplicate.task').length > 0 || undefined, 'duplicate.task', 30_000);
        }
      }),
      { numRuns: 4, examples: [['after', true], ['after', false], ['before', true], ['before', false]] },
    );
  }, 400_000);

  /**
   * One workflow whose only step finished COMPLETED on task T1 with `lost` suspects counted lost (ids too long to keep)
   * and `pending` ones waiting (holders in `holding`), then a fleet with a notification receiver.
   */
  async function lostScene(lost: number, pending: readonly string[], holding: ReadonlySet<string>) {
    const prefix = `dup-unchecked${++counter}`;
    const workflowId = `${prefix}-w`;
    const agent = await startSuspectsAgent(pending, holding, `m-${workflowId}`);
    const receiver = await startWebhookReceiver(SECRET);
    receiver.answerWith(() => ({ kind: 'accept' }));
    keep(agent, receiver);
    const { producer, journal, ref } = await agentWorkflowRows({ redisUrl: redisServer().url, prefix, workflowId, cardUrl: agent.cardUrl, keep });
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: 'T1', contextId: 'ctx-T1', agentCardUrl: agent.cardUrl });
    for (let n = 0; n < lost; n++) expect(await journal.noteSuspect(ref, `${n}`.repeat(SUSPECT_TASK_ID_MAX + 1))).toBe('too-long');
    for (const id of pending) expect(await journal.noteSuspect(ref, id)).toBe('kept');
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'COMPLETED', taskId: 'T1', result: { booked: true } });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, notify: { secret: SECRET, url: receiver.url } });
    keep(fleet);
    await eventually(async () => (await producer.get(workflowId)).state !== 'RUNNING', 'the workflow decided', 30_000);
    await eventually(async () => eventsOf(receiver, 'workflow.finished').length > 0 || undefined, 'workflow.finished', 30_000);
    const view = await producer.get(workflowId);
    const counted = (await fleet.metrics.duplicateTasks.get()).values.filter((value) => value.labels.finding === 'unchecked').reduce((sum, value) => sum + value.value, 0);
    return { view, receiver, counted };
  }

  it('the case: a suspect lost on a finished row: a duplicate-unchecked entry, a duplicate.unchecked event and the metric; COMPLETED stands', async () => {
    const { view, receiver, counted } = await lostScene(1, [], new Set());
    expect(view.state).toBe('COMPLETED');
    const entries = view.history.filter((entry) => entry.kind === 'duplicate-unchecked');
    expect(entries).toEqual([expect.objectContaining({ delegationId: 'main.1', state: 'COMPLETED', taskId: 'T1', lost: 1 })]);
    expect(entries[0]!.summary).toMatch(/twice; it could not be checked/);
    const [event] = await eventually(async () => (eventsOf(receiver, 'duplicate.unchecked').length > 0 ? eventsOf(receiver, 'duplicate.unchecked') : undefined), 'duplicate.unchecked', 30_000);
    expect(event).toMatchObject({ delegationId: 'main.1', data: { step: 'main', state: 'COMPLETED', taskId: 'T1', lost: 1 } });
    expect(counted).toBe(1);
  }, 60_000);

  it('property: any lost count beside any pending suspects: told once exactly when some were lost, holders told apart; the outcome stands', async () => {
    const scenes = fc.tuple(fc.integer({ min: 0, max: 2 }), fc.subarray(['T2', 'T3'])).chain(([lost, pending]) => fc.tuple(fc.constant(lost), fc.constant(pending), fc.subarray(pending)));
    await fc.assert(
      fc.asyncProperty(scenes, async ([lost, pending, holders]) => {
        const { view, receiver, counted } = await lostScene(lost, pending, new Set(holders));
        expect(view.state).toBe('COMPLETED');
        const unchecked = view.history.filter((entry) => entry.kind === 'duplicate-unchecked');
        expect(unchecked.map((entry) => entry.lost)).toEqual(lost > 0 ? [lost] : []);
        expect(counted).toBe(lost > 0 ? 1 : 0);
        expect(view.history.filter((entry) => entry.kind === 'duplicate-task').map((entry) => entry.otherTaskId).sort()).toEqual([...holders].sort());
        if (lost > 0) await eventually(async () => eventsOf(receiver, 'duplicate.unchecked').length > 0 || undefined, 'duplicate.unchecked', 30_000);
        else expect(eventsOf(receiver, 'duplicate.unchecked')).toEqual([]);
      }),
      { numRuns: 4, examples: [[[1, [], []]], [[2, ['T2'], ['T2']]], [[0, ['T2', 'T3'], ['T3']]]] },
    );
  }, 400_000);

  it('property (journal): the unchecked note is written once per lost count, only on a finished row; a retry writes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 5 }), fc.boolean(), async (counts, finished) => {
        const prefix = `unchecked${++counter}`;
        const { journal, ref } = await journalWithIntent(redis(), { prefix, workflowId: `w-${counter}`, now: Date.now });
        if (finished) await journal.applyStatus(ref, { mode: 'outcome', state: 'FAILED', error: { code: 'DEADLINE_EXCEEDED', message: 'ended' } });
        let told = 0;
        for (const lost of counts) {
          const noted = await journal.noteSuspectsUnchecked({ ...ref, step: 'main', state: finished ? 'FAILED' : 'INTENT' }, lost);
          if (!finished) expect(noted).toBeUndefined();
          else expect(noted).toBe(lost > told ? 'noted' : 'already noted');
          if (finished && lost > told) told = lost;
        }
        // The workflow's history list (lua/includes/history.lua), read as stored.
        const stored = await redis().lrange(`${prefix}:{wf:${ref.workflowId}}:history`, 0, -1);
        const entries = stored.map((text) => JSON.parse(text) as { kind: string; lost?: number }).filter((entry) => entry.kind === 'duplicate-unchecked');
        const expected: number[] = [];
        if (finished) counts.reduce((most, lost) => (lost > most ? (expected.push(lost), lost) : most), 0);
        expect(entries.map((entry) => entry.lost)).toEqual(expected);
        expect((await journal.getDelegation(ref))!.state).toBe(finished ? 'FAILED' : 'INTENT');
        expect(await journal.noteSuspectsUnchecked({ ...ref, delegationId: 'none' }, 1)).toBeUndefined();
        await expect(journal.noteSuspectsUnchecked(ref, 0)).rejects.toThrow(RangeError);
      }),
      { numRuns: 30, examples: [[[1, 1], true], [[2, 1, 3], true], [[1], false]] },
    );
  }, 120_000);
});
