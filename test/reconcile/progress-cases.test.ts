/**
 * The progress rule (no livelock) and fairness (docs/agents.md "Progress rule"), case by case through a real fleet (private
 * redis-server, scripted raw node:http agents): R26 (a terminal status update without artifacts: one
 * GetTask collects them), RT4 (a stream that breaks protocol after a valid snapshot, and its 50 MB
 * variant: one GetTask, COMPLETED, bounded downloads), R28 (a parked task whose later subscriptions
 * answer a TaskNotFound frame: stays INPUT_REQUIRED), RT6 (keep-alive-only streams must not hold every
 * follow slot).
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../harness/fleet.ts';
import { NOT_FOUND, artifactText, finished, recordOf, sleep, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { askingHandlers } from '../harness/asking-agent.ts';
import { ev, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const frame = (result: unknown): string => JSON.stringify({ jsonrpc: '2.0', id: 1, result });

describe('R26: a COMPLETED status update without artifacts, in the legacy spelling', () => {
  it('stream {task} TASK_STATE_WORKING, statusUpdate "completed", FIN; GetTask has a1 = "done" -> COMPLETED, a1 = "done", one SendMessage', async () => {
    const { producer: p, agent } = await h.setUp((seen) => ({
      SubscribeToTask: () => ({
        sse: [taskEvent(task('T1', 'TASK_STATE_WORKING', { contextId: seen.contextId })), ev(frame({ statusUpdate: { taskId: 'T1', contextId: seen.contextId, status: { state: 'completed', timestamp: h.at(2) } } }))],
      }),
      GetTask: () => ({ result: { id: 'T1', contextId: seen.contextId, status: { state: 'completed' }, artifacts: [{ artifactId: 'a1', parts: [{ text: 'done' }] }] } }),
    }));
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r26', idempotencyKey: 'r26' });
    expect((await finished(p, id)).state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('done');
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('GetTask')).toBe(1);
  });
});

describe('RT4: a stream that breaks protocol after a valid snapshot', () => {
  it('{task} WORKING, then "data: x" events: one GetTask after the bad stream, COMPLETED, one subscription', async () => {
    const { producer: p, agent } = await h.setUp((seen) => ({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), 'data: x\n\n', 'data: x\n\n'], endAfter: 'hang' }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'done' } }) }),
    }));
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'rt4', idempotencyKey: 'rt4' });
    expect((await finished(p, id)).state).toBe('COMPLETED');
    await sleep(1_000);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.count('GetTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('50 MB variant: one event over the 8 MiB cap: one GetTask, COMPLETED, one subscription (one bounded download)', async () => {
    const megabyte = 'x'.repeat(1024 * 1024);
    const { producer: p, agent } = await h.setUp((seen) => ({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), 'data: "', ...Array.from({ length: 50 }, () => megabyte), '"\n\n'], endAfter: 'hang' }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'done' } }) }),
    }));
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'rt4b', idempotencyKey: 'rt4b' });
    expect((await finished(p, id, 30_000)).state).toBe('COMPLETED');
    await sleep(1_000);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(agent.count('GetTask')).toBe(1);
  });
});

describe('R28: subscribing to a parked task answers 200 SSE with only a TaskNotFound frame', () => {
  it('after 6 s parked: INPUT_REQUIRED, one open question, not LOST, at most 6 subscriptions', async () => {
    const { producer: p, agent } = await h.setUp((seen) => askingHandlers(seen, { later: () => ({ sse: [ev(JSON.stringify({ jsonrpc: '2.0', id: 1, ...NOT_FOUND }))] }) }));
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'r28', idempotencyKey: 'r28' });
    await eventually(async () => (await recordOf(p, id))?.state === 'INPUT_REQUIRED', 'parked', 10_000);
    await sleep(6_000);
    expect((await recordOf(p, id))!.state).toBe('INPUT_REQUIRED');
    expect(await p.questions(id)).toHaveLength(1);
    expect(agent.count('SubscribeToTask')).toBeLessThanOrEqual(6);
  });
});

describe('RT6: keep-alive-only streams hold every follow slot', () => {
  it('follow concurrency 5; 5 delegations to an agent sending ":\\n" every 0.5 s for ever, then 5 to a healthy agent: the healthy ones COMPLETE', async () => {
    const keepAlives = Array.from({ length: 400 }, () => [':\n', { waitMs: 500 }]).flat();
    const stuck: ScriptedAgentHandle = await startScriptedAgent({
      SendMessage: (params) => ({ result: { task: task(`S-${params.message.messageId}`, 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } }),
      SubscribeToTask: () => ({ sse: keepAlives, endAfter: 'hang' }),
      GetTask: (params) => ({ result: task(params.id, 'WORKING') }),
    });
    const healthy = await startScriptedAgent({
      SendMessage: (params) => ({ result: { task: task(`H-${params.message.messageId}`, 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } }),
      SubscribeToTask: (params) => ({ sse: [ev(frame({ task: task(params.id, 'WORKING') })), { waitMs: 300 }, ev(frame({ task: task(params.id, 'COMPLETED', { artifacts: { a1: 'ok' } }) }))] }),
      GetTask: (params) => ({ result: task(params.id, 'COMPLETED', { artifacts: { a1: 'ok' } }) }),
    });
    try {
      const prefix = h.newPrefix();
      const p = h.producer(prefix);
      await h.fleetFor(prefix, { concurrency: { follow: 5 }, streamQuietMs: 3_000, reconcileIntervalMs: 60_000 });
      const stuckIds = [];
      for (let index = 0; index < 5; index++) stuckIds.push((await p.delegate({ agent: stuck.cardUrl, text: `stuck ${index}`, idempotencyKey: `rt6-stuck-${index}` })).id);
      await eventually(async () => stuck.count('SubscribeToTask') >= 2 && true, 'stuck streams open', 10_000);
      const healthyIds = [];
      for (let index = 0; index < 5; index++) healthyIds.push((await p.delegate({ agent: healthy.cardUrl, text: `healthy ${index}`, idempotencyKey: `rt6-healthy-${index}` })).id);
      for (const id of healthyIds) expect((await finished(p, id, 20_000)).state).toBe('COMPLETED');
      for (const id of stuckIds) expect((await recordOf(p, id))!.state).not.toBe('COMPLETED');
    } finally {
      await stuck.close();
      await healthy.close();
    }
  });
});
