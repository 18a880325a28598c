/**
 * Field cases round 3, §A (../shared/cases/field-reports-3.md): what an answer proves, kept as three facts
 * (delivery, ownership, effect) and decided by the delegation core's table. Real redis-server, real fleet,
 * scripted raw JSON-RPC agents (exact bytes). One test per case; the kinds' properties are in
 * packages/workers/test/transitions.test.ts and packages/shared/test/edge-ownership.test.ts.
 */
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { httpVerifier } from '@durable-a2a/workers';
import type { DelegationRecord, DelegationView } from '@durable-a2a/shared';
import { artifactText, finished, recordOf, useFieldCases, viewOf, workflowSettled, type Setup } from '../harness/field-cases.ts';
import { AU, SU, ev, task, taskEvent, type ScriptedHandler } from '../harness/scripted-agent.ts';
import { eventually } from '../harness/fleet.ts';
import { closeServer, listenOnLoopback } from '../harness/ports.ts';

const h = useFieldCases();
const MiB = 1024 * 1024;

/** A task that holds our message in its history (content proof of ownership). */
const ours = (params: { message: { messageId: string; contextId?: string } }, state: string, extra: Parameters<typeof task>[2] = {}) =>
  task('T1', state, { contextId: params.message.contextId, history: [params.message], ...extra });

describe('A31: an answer over a limit arrived, so the work may be done', () => {
  it('two agents with the skill, each answering with a 17 MiB artifact: one SendMessage, AMBIGUOUS LIMIT_EXCEEDED, the step not re-delegated (one booking)', async () => {
    const prefix = h.newPrefix();
    const huge = 'x'.repeat(17 * MiB);
    const bookings: string[] = [];
    const answer: ScriptedHandler = (params) => {
      bookings.push(params.message.messageId);
      return { result: { task: ours(params, 'COMPLETED', { artifacts: { a1: huge } }) } };
    };
    const first = await h.agentWith({ SendMessage: answer });
    const second = await h.agentWith({ SendMessage: answer });
    const producer = h.producer(prefix);
    await producer.registerAgent(first.cardUrl);
    await producer.registerAgent(second.cardUrl);
    await h.fleetFor(prefix);
    await producer.startWorkflow({ workflowId: 'skill-big', maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book' } }] });
    const view = await workflowSettled(producer, 'skill-big', 30_000);
    expect(view.state).toBe('NEEDS_ATTENTION');
    expect(bookings).toHaveLength(1);
    expect(first.count('SendMessage') + second.count('SendMessage')).toBe(1);
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'responseBodyBytes', delivery: 'received' } });
  }, 60_000);
});

describe('A32: a limit hit on the follow path is journaled, in bounded calls', () => {
  const parts = Array.from({ length: 1_001 }, (_, index) => ({ text: `p${index}` }));
  const overLimit = (seen: Setup['seen']) =>
    ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { artifactUpdate: { taskId: 'T1', contextId: seen.contextId, artifact: { artifactId: 'big', parts }, lastChunk: true } } }));

  it('(a) an artifact update over the part limit, then COMPLETED; GetTask answers COMPLETED without artifacts: LIMIT_EXCEEDED, never a result-less success', async () => {
    const { producer: p, agent, id } = await start((seen) => ({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), overLimit(seen), ev(SU('COMPLETED', { contextId: seen.contextId }))] }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId }) }),
    }));
    const record = await finished(p, id, 20_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'partsPerMessage', delivery: 'received' } });
    expect(record.error?.message).toContain('partsPerMessage');
    expect(agent.count('GetTask')).toBe(1);
    expect(agent.count('SubscribeToTask')).toBe(1);
  });

  it('(b) GetTask returns the same oversized artifact: LIMIT_EXCEEDED at once (one GetTask), not RUNNING until the no-progress window', async () => {
    const { producer: p, agent, id } = await start((seen) => ({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), overLimit(seen), ev(SU('COMPLETED', { contextId: seen.contextId }))] }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: [{ artifactId: 'big', parts }] }) }),
    }));
    const record = await finished(p, id, 20_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'partsPerMessage' } });
    expect(agent.count('GetTask')).toBe(1);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect((await viewOf(p, id)).artifacts).toEqual([]);
  });
});

describe('A33: an answer whose envelope says "id": null', () => {
  it('its history holds our messageId: COMPLETED with its artifact, one SendMessage; GetTask with a null id too', async () => {
    const { producer: p, agent, id } = await start(() => ({
      SendMessage: (params) => ({ envelopeId: null, result: { task: ours(params, 'COMPLETED', { contextId: 'c', artifacts: { a1: 'echo: hello' } }) } }),
      GetTask: () => ({ envelopeId: null, result: task('T1', 'COMPLETED', { contextId: 'c', artifacts: { a1: 'echo: hello' } }) }),
    }));
    const record = await finished(p, id, 20_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('echo: hello');
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('another request\'s id is still refused: never adopted from the answer (the reconciler searches)', async () => {
    const { producer: p, agent, id } = await start(() => ({
      SendMessage: (params) => ({ envelopeId: 987_654, result: { task: ours(params, 'COMPLETED', { artifacts: { a1: 'not proven' } }) } }),
      ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
    }));
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error?.message).toContain('RESPONSE_ID_MISMATCH');
    expect(agent.count('SendMessage')).toBe(1);
  }, 45_000);
});

describe('A34: a stream we opened, whose first event carries no history', () => {
  it('SendStreamingMessage: a final COMPLETED status update (a context the agent chose), then the artifact: COMPLETED with the artifact, one send', async () => {
    const { producer: p, agent, id } = await start(
      () => ({
        SendStreamingMessage: () => ({ sse: [ev(SU('COMPLETED', { contextId: 'agent-chosen' })), ev(AU('a1', false, true, 'streamed result', { contextId: 'agent-chosen' }))] }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: 'agent-chosen', artifacts: { a1: 'streamed result' } }) }),
      }),
      { streamingSends: true },
    );
    const record = await finished(p, id, 20_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(record.error?.code).not.toBe('FOREIGN_TASK');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('streamed result');
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
  });
});

describe('A35: a task adopted from a ListTasks summary keeps its result', () => {
  it('sent, not recorded; ListTasks answers a summary (no artifacts) of the COMPLETED task: read in full before it is journaled, the artifact kept, no second send', async () => {
    let messageId = '';
    const agent = await h.agentWith({
      ListTasks: (params) => ({ result: { tasks: [task('T1', 'COMPLETED', { contextId: params.contextId, history: [{ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }] })], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { history: [{ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }], artifacts: { a1: 'the booking' } }) }),
    });
    const { producer, id } = await h.sentNotRecorded(agent, (ours) => (messageId = ours), { reconcileIntervalMs: 60_000 });
    const record = await finished(producer, id, 30_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe('the booking');
    expect(agent.count('GetTask')).toBeGreaterThanOrEqual(1);
    expect(agent.count('SendMessage')).toBe(0);
  }, 45_000);
});

describe('A36: a status without a message replaces the previous one', () => {
  it('WORKING "Generating response...", then COMPLETED with no message: the finished attempt keeps no stale status message', async () => {
    const { producer: p, id } = await start((seen) => ({
      SubscribeToTask: () => ({
        sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, message: { messageId: 'g1', role: 'ROLE_AGENT', parts: [{ text: 'Generating response...' }] } })), ev(SU('COMPLETED', { contextId: seen.contextId }))],
      }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId }) }),
    }));
    const record = await finished(p, id, 20_000);
    expect(record.state).toBe('COMPLETED');
    expect(record.statusMessage).toBeUndefined();
    expect(JSON.stringify(await viewOf(p, id))).not.toContain('Generating response...');
  });
});

describe('A37: a failed task whose status.message is a bare string', () => {
  it('FAILED with the text kept as the reason; the answer is not rejected whole; one SendMessage', async () => {
    const { producer: p, agent, id } = await start(() => ({
      SendMessage: (params) => ({ result: { task: { ...ours(params, 'FAILED'), status: { state: 'TASK_STATE_FAILED', message: 'Handler failed: boom' } } } }),
    }));
    const record = await finished(p, id, 20_000);
    expect(record.state).toBe('FAILED');
    expect(record.statusMessage?.parts[0]?.text).toBe('Handler failed: boom');
    expect(record.error?.code).not.toBe('PROTOCOL_ERROR');
    expect(agent.count('SendMessage')).toBe(1);
  });
});

describe('A38: the verifier cannot be pointed elsewhere by the agent it verifies', () => {
  it('a task id of "..", "." or "": effect unknown with the reason, nothing read; an ordinary id is one path segment', async () => {
    const paths: string[] = [];
    const server = createServer((request, response) => {
      paths.push(request.url ?? '');
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"x"}');
    });
    const port = await listenOnLoopback(server);
    try {
      const verifier = httpVerifier({ urlTemplate: `http://127.0.0.1:${port}/api/bookings/{taskId}`, responseSchema: z.object({ id: z.string() }) });
      const delegation = (taskId: string | undefined) => ({ workflowId: 'wf', delegationId: 'main.1', step: 'main', messageId: 'M1', ...(taskId === undefined ? {} : { taskId }) }) as unknown as DelegationView;
      for (const taskId of ['..', '.', '', undefined]) {
        const finding = await verifier.verify({ delegation: delegation(taskId), original: undefined, params: {} });
        expect(finding.effect, JSON.stringify(taskId)).toBe('unknown');
        expect(JSON.stringify(finding.evidence)).toContain('not a path segment');
      }
      expect(paths).toEqual([]);
      const found = await verifier.verify({ delegation: delegation('a/../b'), original: undefined, params: {} });
      expect(found.effect).toBe('present');
      expect(paths).toEqual(['/api/bookings/a%2F..%2Fb']);
      // Encoded dot segments, backslashes, a query or a fragment: still the one segment, whatever the URL parser does.
      for (const taskId of ['%2e%2e', '.%2E', '..\\', '..?x', '..#x', '%2E%2E%2Fadmin']) {
        paths.length = 0;
        expect((await verifier.verify({ delegation: delegation(taskId), original: undefined, params: {} })).effect, taskId).toBe('present');
        expect(paths.map((path) => decodeURIComponent(path.slice('/api/bookings/'.length))), taskId).toEqual([taskId]);
      }
    } finally {
      await closeServer(server);
    }
  });
});

/** Agent (SendMessage accepts, keeping our message) + producer + fleet, then one delegation. */
async function start(handlers: (seen: Setup['seen']) => Parameters<typeof h.setUp>[0] extends (seen: Setup['seen']) => infer H ? H : never, fleetOptions: Parameters<typeof h.setUp>[1] = {}) {
  const setup = await h.setUp(handlers, fleetOptions);
  const { id } = await setup.producer.delegate({ agent: setup.agent.cardUrl, text: 'go', idempotencyKey: `${setup.prefix}-1` });
  await eventually(async () => (await recordOf(setup.producer, id)) !== undefined, 'journaled');
  return { ...setup, id };
}

export type { DelegationRecord };
