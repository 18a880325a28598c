/**
 * Field cases end to end — Reads: observations older than what we know, and "Task not found" for a task we had (R12, R13).
 * Producer → fleet → a scripted raw JSON-RPC agent → journal; each `describe` names its case id
 * (docs/field-cases.md says what each proves); the case's "Expected" is the assertion.
 */
import { describe, expect, it } from 'vitest';
import { STALE_READ_REREADS } from '../../packages/workers/src/delegation/core/policy.ts';
import { eventually } from '../harness/fleet.ts';
import {
  NOT_FOUND,
  artifactText,
  finished,
  metric,
  recordOf,
  ref,
  sleep,
  terminalTransitions,
  useFieldCases,
  viewOf,
  workflowSettled,
  type Setup,
} from '../harness/field-cases.ts';
import {
  SU,
  ev,
  task,
} from '../harness/scripted-agent.ts';

const h = useFieldCases();

describe('R12: reads older than what the stream said', () => {
  it('stream COMPLETED (10:00:05), then the connection drops and GetTask answers WORKING (10:00:01): stays COMPLETED, no resubscribe', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => ({ sse: [ev(SU('COMPLETED', { contextId: seen.contextId, timestamp: h.at(5) }))], endAfter: 'destroy' }),
        GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(1) }) }),
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r12', idempotencyKey: 'r12' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    await workflowSettled(p, id);
    // Force more reads: a sweep of everything, twice.
    await fleet.sweepAll();
    await sleep(700);
    await fleet.sweepAll();
    await sleep(1_000);
    const after = (await recordOf(p, id))!;
    expect(after.state).toBe('COMPLETED');
    expect(after.statusTimestamp).toBe(h.at(5));
    // The stale read did happen (after the drop), was asked again a bounded number of times, and was ignored.
    expect(agent.count('GetTask')).toBe(1 + STALE_READ_REREADS);
    expect(await metric(fleet.metrics.transitions, { source: 'get-task' })).toBe(0);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    expect(await terminalTransitions(fleet)).toBe(1);
    expect(await metric(fleet.metrics.transitions, { state: 'TASK_STATE_WORKING' })).toBe(0);
    expect(await metric(fleet.metrics.redelegations)).toBe(0);
    expect((await p.get(id)).state).toBe('COMPLETED');
  });

  it('A2A #373 kind: stream COMPLETED without artifacts, GetTask answers WORKING (no timestamp) before its store catches up: read again, COMPLETED with the result', async () => {
    const { producer: p, agent } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => ({ sse: [ev(SU('WORKING', { contextId: seen.contextId, timestamp: h.at(1) })), ev(SU('COMPLETED', { contextId: seen.contextId, timestamp: h.at(5) }))], endAfter: 'close' }),
        GetTask: (_params, call) =>
          call.count === 1
            ? { result: task('T1', 'WORKING', { contextId: seen.contextId }) }
            : { result: task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: h.at(5), artifacts: { a1: 'the booking' } }) },
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r12-lag', idempotencyKey: 'r12-lag' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('the booking');
    expect(agent.count('GetTask')).toBe(2);
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('a stale GetTask snapshot applied to a COMPLETED record is ignored ("finished"), terminal states never regress', async () => {
    const { producer: p, agent } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => ({ sse: [ev(SU('COMPLETED', { contextId: seen.contextId, timestamp: h.at(5) }))], endAfter: 'close' }),
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r12c', idempotencyKey: 'r12c' });
    await finished(p, id);
    const before = (await recordOf(p, id))!;
    const { applyTask } = await import('@durable-a2a/shared');
    const result = await applyTask(p.journal, ref(id), task('T1', 'WORKING', { timestamp: h.at(1) }) as never, { snapshot: true });
    expect(result).toEqual({ applied: false, reason: 'finished' });
    const after = (await recordOf(p, id))!;
    expect(after.state).toBe('COMPLETED');
    expect(after.version).toBe(before.version);
  });

  it('a late SU(WORKING, 10:00:06) after COMPLETED on the stream: stays COMPLETED, 0 resubscribes, 0 re-delegations', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: [ev(SU('COMPLETED', { contextId: seen.contextId, timestamp: h.at(5) })), ev(SU('WORKING', { contextId: seen.contextId, timestamp: h.at(6) }))],
          endAfter: 'close',
        }),
        GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(6) }) }),
      }),
      { reconcileIntervalMs: 60_000 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r12b', idempotencyKey: 'r12b' });
    await finished(p, id);
    await workflowSettled(p, id);
    await fleet.sweepAll();
    await sleep(1_000);
    const after = (await recordOf(p, id))!;
    expect(after.state).toBe('COMPLETED');
    expect(after.statusTimestamp).toBe(h.at(5));
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    // Our side closes the stream at COMPLETED (a finished row takes nothing more): the late SU is never applied.
    expect(await metric(fleet.metrics.staleObservations, { reason: 'finished' })).toBe(0);
    expect(await terminalTransitions(fleet)).toBe(1);
    expect(await metric(fleet.metrics.redelegations)).toBe(0);
    expect((await p.get(id)).state).toBe('COMPLETED');
  });
});

describe('R13: "Task not found" for a task that exists or existed', () => {
  it('(a) agent restarted: every GetTask/SubscribeToTask → -32001: LOST only after ≥3 not-founds over the window; then one re-delegation', async () => {
    const prefix = h.newPrefix();
    const seen: Setup['seen'] = {};
    const agent = await h.agentWith({
      SendMessage: (params, call) => {
        if (call.count === 1) return h.accept(seen)(params, call);
        return { result: { task: task('T2', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'redone' } }) } };
      },
      GetTask: (params) => (params.id === 'T1' ? NOT_FOUND : { result: task('T2', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'redone' } }) }),
      SubscribeToTask: (params) => (params.id === 'T1' ? NOT_FOUND : { error: { code: -32004, message: 'terminal' } }),
      ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
    });
    const producer = h.producer(prefix);
    const windowMs = 3_000;
    const fleet = await h.fleetFor(prefix, { notFoundWindowMs: windowMs, notFoundThreshold: 3, reconcileIntervalMs: 500 });
    const { id } = await producer.startWorkflow({ workflowId: 'r13a', steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'r13a' } }], maxAttemptsPerStep: 2 });
    // Well inside the window: not LOST yet, whatever the number of answers.
    await eventually(async () => agent.count('GetTask') >= 1, 'first not-found');
    const firstNotFound = agent.calls('GetTask')[0]!.at;
    await sleep(windowMs / 2);
    expect((await recordOf(producer, id))!.state).not.toBe('LOST');

    const lost = await finished(producer, id, 20_000);
    expect(lost.state).toBe('LOST');
    const notFoundsForT1 = agent.calls('GetTask').filter((call) => call.params.id === 'T1');
    expect(notFoundsForT1.length).toBeGreaterThanOrEqual(3);
    expect(lost.finishedAt! - firstNotFound).toBeGreaterThanOrEqual(windowMs);

    // Policy: a LOST step may be tried again on the same agent; exactly one new attempt, new messageId.
    const view = await workflowSettled(producer, id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts.map((attempt) => attempt.state)).toEqual(['LOST', 'COMPLETED']);
    expect(await metric(fleet.metrics.redelegations)).toBe(1);
    const sent = agent.calls('SendMessage').map((call) => call.params.message.messageId);
    expect(sent).toHaveLength(2);
    expect(new Set(sent).size).toBe(2);
    expect(agent.calls('SendMessage')[1]!.params.message.taskId).toBeUndefined();
  });

  it('(a) before marking a once-known task LOST, ListTasks(contextId) is consulted for our messageId', async () => {
    const { producer: p, agent } = await h.setUp(
      () => ({
        GetTask: () => NOT_FOUND,
        SubscribeToTask: () => NOT_FOUND,
        ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
      }),
      { notFoundWindowMs: 1_000, notFoundThreshold: 3, reconcileIntervalMs: 500 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r13a2', idempotencyKey: 'r13a2' });
    const record = await finished(p, id);
    expect(record.state).toBe('LOST');
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
  });

  it('(b) replicas answer not-found, WORKING, not-found, COMPLETED: the first non-error answer wins, COMPLETED, not LOST, 0 re-delegations', async () => {
    const answers = ['not-found', 'WORKING', 'not-found', 'COMPLETED'];
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        GetTask: (_params, call) => {
          const answer = answers[Math.min(call.count, answers.length) - 1]!;
          if (answer === 'not-found') return NOT_FOUND;
          return { result: task('T1', answer, { contextId: seen.contextId, timestamp: h.at(call.count), ...(answer === 'COMPLETED' ? { artifacts: { a1: 'ok' } } : {}) }) };
        },
        SubscribeToTask: () => NOT_FOUND,
        ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
      }),
      { notFoundWindowMs: 1_000, notFoundThreshold: 3, reconcileIntervalMs: 500 },
    );
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r13b', idempotencyKey: 'r13b' });
    const record = await finished(p, id);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('GetTask')).toBe(4);
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('ok');
    expect(agent.count('SendMessage')).toBe(1);
    expect(await metric(fleet.metrics.redelegations)).toBe(0);
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
  });
});
