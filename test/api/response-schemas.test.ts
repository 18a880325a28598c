/**
 * Response schemas against what the views really produce (the kind behind
 * "GET /v1/workflows/:id answers 500 for every NEEDS_ATTENTION workflow"): a
 * workflow in every state, NEEDS_ATTENTION with every attention code (and a
 * row written as prose by an older release), attempts in every journal state
 * with every recorded-error field, goes through every read route. Each answer
 * must be 200 and carry exactly what the view holds: a schema that refuses a
 * field answers 500, one that strips a field loses it silently.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ATTENTION_CODES, AgentRegistry, JOURNAL_STATES, WORKFLOW_STATES, buildIntent, type Attention, type JournalState } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { ApiServer } from '@durable-a2a/producer/server';
import { useRedisServer } from '../harness/redis.ts';
import { authorized, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const PREFIX = 'schemas';
const AGENT = 'http://127.0.0.1:9/';
let producer: Producer;
let app: ApiServer;

beforeAll(async () => {
  producer = createProducer({ redis: redisServer().url, prefix: PREFIX, addressPolicy: { allowLoopback: true } });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, producer });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await producer?.close();
});

/** A two-step workflow (no workers run: the attempts stay as the test journals them). */
async function workflowWith(workflowId: string, attemptState?: JournalState): Promise<void> {
  await producer.startWorkflow({
    workflowId,
    steps: [
      { name: 'first', agent: AGENT, message: { text: 'one' }, compensation: { agent: AGENT, message: { text: 'undo one' } } },
      { name: 'second', agent: AGENT, message: { text: 'two' } },
    ],
  });
  if (!attemptState || attemptState === 'INTENT') return;
  const ref = { workflowId, delegationId: 'first.1' };
  const question = attemptState === 'INPUT_REQUIRED' || attemptState === 'AUTH_REQUIRED';
  await producer.journal.applyStatus(ref, {
    mode: question ? 'event' : 'outcome',
    state: attemptState,
    taskId: `task-${workflowId}`,
    contextId: `context-${workflowId}`,
    statusTimestamp: new Date().toISOString(),
    ...(question ? { statusMessage: { role: 'ROLE_AGENT', messageId: 'q-1', parts: [{ text: 'two rooms or one?' }] } } : {}),
    error: { code: 'LIMIT_EXCEEDED', message: 'over the limit', retryable: false, delivery: 'received', limit: 'responseBodyBytes' },
  } as Parameters<Producer['journal']['applyStatus']>[1]);
}

/** What every read route answers for `workflowId` must be the view, field for field. */
async function expectEveryRouteServes(workflowId: string): Promise<void> {
  const view = JSON.parse(JSON.stringify(await producer.get(workflowId))) as { state: string; attention?: Attention };
  const response = await authorized(app, { method: 'GET', url: `/v1/workflows/${workflowId}` });
  expect(response.statusCode, response.body).toBe(200);
  expect(response.json()).toEqual(view);
  const longPoll = await authorized(app, { method: 'GET', url: `/v1/workflows/${workflowId}?waitMs=1` });
  expect(longPoll.statusCode, longPoll.body).toBe(200);
  for (const url of [`/v1/workflows?state=${view.state}&limit=500`, '/v1/workflows?waiting=true&limit=500', '/v1/questions?limit=500']) {
    const list = await authorized(app, { method: 'GET', url });
    expect(list.statusCode, `${url}: ${list.body}`).toBe(200);
  }
  const summaries = (await authorized(app, { method: 'GET', url: `/v1/workflows?state=${view.state}&limit=500` })).json<{ workflows: { workflowId: string; attention?: Attention }[] }>();
  const summary = summaries.workflows.find((row) => row.workflowId === workflowId);
  expect(summary?.attention).toEqual(view.attention);
  for (const url of [`/ui/workflows/${workflowId}`, `/ui/workflows/${workflowId}/panel`]) {
    const page = await authorized(app, { method: 'GET', url });
    expect(page.statusCode, url).toBe(200);
    if (view.attention) expect(page.body).toContain(view.attention.code);
  }
}

describe('every read route serves every view', () => {
  it.each(WORKFLOW_STATES.filter((state) => state !== 'NEEDS_ATTENTION'))('a workflow in %s', async (state) => {
    const workflowId = `state-${state.toLowerCase()}`;
    await workflowWith(workflowId);
    await producer.journal.updateWorkflow(workflowId, { state });
    await expectEveryRouteServes(workflowId);
  });

  it.each(ATTENTION_CODES)('NEEDS_ATTENTION with code %s (delegationId and evidence)', async (code) => {
    const workflowId = `attention-${code.toLowerCase().replaceAll('_', '-')}`;
    await workflowWith(workflowId, 'COMPLETED');
    const attention: Attention = { code, message: `a person decides (${code})`, delegationId: 'first.1', evidence: { state: 'COMPLETED', taskId: 'task-1', effect: 'unknown', nested: [1, 'two', null] } };
    await producer.journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention });
    await expectEveryRouteServes(workflowId);
    const body = (await authorized(app, { method: 'GET', url: `/v1/workflows/${workflowId}` })).json<{ attention: Attention }>();
    expect(body.attention).toEqual(attention);
  });

  it('NEEDS_ATTENTION with only code and message', async () => {
    await workflowWith('attention-bare', 'AMBIGUOUS');
    await producer.journal.updateWorkflow('attention-bare', { state: 'NEEDS_ATTENTION', attention: { code: 'AMBIGUOUS_SEND', message: 'sent or not' } });
    await expectEveryRouteServes('attention-bare');
  });

  it.each(JOURNAL_STATES)('an attempt in %s, with every recorded-error field', async (attemptState) => {
    const workflowId = `attempt-${attemptState.toLowerCase().replaceAll('_', '-')}`;
    await workflowWith(workflowId, attemptState);
    await expectEveryRouteServes(workflowId);
  });

  it('any evidence a journal row can hold (property)', async () => {
    await workflowWith('attention-property', 'COMPLETED');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ATTENTION_CODES), fc.string({ minLength: 1 }), fc.option(fc.jsonValue(), { nil: undefined }), async (code, message, evidence) => {
        await producer.journal.updateWorkflow('attention-property', { state: 'NEEDS_ATTENTION', attention: { code, message, delegationId: 'first.1', ...(evidence === undefined ? {} : { evidence }) } });
        const response = await authorized(app, { method: 'GET', url: '/v1/workflows/attention-property' });
        expect(response.statusCode, response.body).toBe(200);
        expect(response.json<{ attention: Attention }>().attention).toEqual(JSON.parse(JSON.stringify((await producer.get('attention-property')).attention)));
      }),
      { numRuns: 40 },
    );
  });
});

describe('POST /v1/workflows/:id/resolve never claims a change that did not happen', () => {
  const cases = ATTENTION_CODES.flatMap((code) => (['AMBIGUOUS', 'COMPLETED'] as const).flatMap((attemptState) => (['retry', 'abandon'] as const).map((action) => [code, attemptState, action] as const)));
  it.each(cases)('%s with an attempt %s, %s: 202 and the row changed, or 409 RESOLUTION_NOT_ALLOWED naming the allowed actions and nothing written', async (code, attemptState, action) => {
    const workflowId = `resolve-${code}-${attemptState}-${action}`.toLowerCase().replaceAll('_', '-');
    await workflowWith(workflowId, attemptState);
    await producer.journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention: { code, message: 'a person decides', delegationId: 'first.1' }, ...(code === 'CANCEL_LOST_RACE' ? { cancelRequested: true } : {}) });
    const before = await producer.journal.getWorkflowHash(workflowId);
    const response = await authorized(app, { method: 'POST', url: `/v1/workflows/${workflowId}/resolve`, payload: { action } });
    const after = await producer.journal.getWorkflowHash(workflowId);
    const retryMeansSomething = attemptState === 'AMBIGUOUS' && ['AMBIGUOUS_SEND', 'NO_PROGRESS', 'PROTOCOL_ERROR', 'AUTH', 'SEARCH_UNAVAILABLE', 'UNSPECIFIED', 'ADDRESS_REFUSED'].includes(code);
    if (action === 'abandon' || retryMeansSomething) {
      expect(response.statusCode, response.body).toBe(202);
      expect(after!.state).toBe('RUNNING');
      if (action === 'retry') expect(JSON.parse(after!.retryApproved!)).toEqual(['first.1']);
      else expect(after!.cancelRequested).toBe('1');
      return;
    }
    expect(response.statusCode, response.body).toBe(409);
    expect(response.json()).toMatchObject({ code: 'RESOLUTION_NOT_ALLOWED', attentionCode: code, allowedActions: ['abandon'] });
    expect(after).toEqual(before);
    const page = await authorized(app, { method: 'GET', url: `/ui/workflows/${workflowId}` });
    expect(page.body).not.toContain('value="retry"');
    expect(page.body).toContain('value="abandon"');
  });
});

describe('POST /v1/workflows/:id/resolve on a failed compensation (COMPENSATION_FAILED naming it)', () => {
  /** first.1 COMPLETED, its compensation first.1.undo REJECTED, the workflow waiting for a person. */
  async function compensationFailed(workflowId: string): Promise<void> {
    await workflowWith(workflowId, 'COMPLETED');
    const intent = buildIntent({ workflowId, step: 'first', attempt: 1, kind: 'compensation', agentCardUrl: AGENT, message: { parts: [{ text: 'undo one' }] }, now: Date.now() });
    await producer.journal.createIntent(workflowId, intent);
    const ref = { workflowId, delegationId: 'first.1.undo' };
    await producer.journal.applyStatus(ref, { mode: 'outcome', state: 'REJECTED', taskId: `undo-${workflowId}`, error: { code: 'TASK_REJECTED', message: 'no such booking' } } as Parameters<Producer['journal']['applyStatus']>[1]);
    await producer.journal.updateWorkflow(workflowId, { state: 'COMPENSATING', stopping: ['second.1 REJECTED'], failure: ['second.1 REJECTED'] });
    await producer.journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention: { code: 'COMPENSATION_FAILED', message: 'first.1.undo ended REJECTED: no such booking', delegationId: 'first.1.undo' } });
  }

  it('retry: 202, that compensation sent back (a new one follows), the stop kept; the page offers retry', async () => {
    await compensationFailed('resolve-undo-retry');
    const page = await authorized(app, { method: 'GET', url: '/ui/workflows/resolve-undo-retry' });
    expect(page.body).toContain('value="retry"');
    const response = await authorized(app, { method: 'POST', url: '/v1/workflows/resolve-undo-retry/resolve', payload: { action: 'retry' } });
    expect(response.statusCode, response.body).toBe(202);
    const after = await producer.journal.getWorkflow('resolve-undo-retry');
    expect(after).toMatchObject({ state: 'RUNNING', retryApproved: ['first.1.undo'], stopping: ['second.1 REJECTED'], abandonedCompensations: [] });
    expect(after!.attention).toBeUndefined();
    // The live view shows the decision: in producer.get and, field for field, on every read route.
    const view = await producer.get('resolve-undo-retry');
    expect(view).toMatchObject({ retryApproved: ['first.1.undo'] });
    expect(view.abandonedCompensations).toBeUndefined();
    await expectEveryRouteServes('resolve-undo-retry');
  });

  it('abandon: 202, that compensation given up; a second abandon is 409 WORKFLOW_FINISHED, nothing written', async () => {
    await compensationFailed('resolve-undo-abandon');
    const response = await authorized(app, { method: 'POST', url: '/v1/workflows/resolve-undo-abandon/resolve', payload: { action: 'abandon' } });
    expect(response.statusCode, response.body).toBe(202);
    const after = await producer.journal.getWorkflow('resolve-undo-abandon');
    expect(after).toMatchObject({ state: 'RUNNING', cancelRequested: true, abandonedCompensations: ['first.1.undo'], retryApproved: [] });
    expect(after!.stopping).toEqual(['abandoned by a person (COMPENSATION_FAILED): first.1.undo ended REJECTED: no such booking', 'second.1 REJECTED']);
    // The live view shows the undo given up: on the workflow and on the compensation's attempt, on every read route and the page.
    const view = await producer.get('resolve-undo-abandon');
    expect(view).toMatchObject({ abandonedCompensations: ['first.1.undo'] });
    expect(view.retryApproved).toBeUndefined();
    expect(view.steps[0]!.compensations.map((undo) => [undo.delegationId, undo.abandoned])).toEqual([['first.1.undo', true]]);
    await expectEveryRouteServes('resolve-undo-abandon');
    expect((await authorized(app, { method: 'GET', url: '/ui/workflows/resolve-undo-abandon' })).body).toContain('given up by a person');
    const before = await producer.journal.getWorkflowHash('resolve-undo-abandon');
    const again = await authorized(app, { method: 'POST', url: '/v1/workflows/resolve-undo-abandon/resolve', payload: { action: 'abandon' } });
    expect(again.statusCode, again.body).toBe(409);
    expect(again.json()).toMatchObject({ code: 'WORKFLOW_FINISHED' });
    expect(await producer.journal.getWorkflowHash('resolve-undo-abandon')).toEqual(before);
  });
});

describe("a workflow's updatedAt moves with every change of its attempts' state; the list is newest (updatedAt) first", () => {
  it('an attempt moving to INPUT_REQUIRED (then COMPLETED) moves updatedAt, and the workflow goes to the top of the list', async () => {
    await workflowWith('order-older');
    await new Promise((resolve) => setTimeout(resolve, 5));
    await workflowWith('order-newer');
    const updatedAt = async (id: string) => Number((await producer.journal.getWorkflowHash(id))!.updatedAt);
    const listed = async () => (await authorized(app, { method: 'GET', url: '/v1/workflows?state=RUNNING&limit=500' })).json<{ ids: string[] }>().ids.filter((id) => id.startsWith('order-'));
    expect(await listed()).toEqual(['order-newer', 'order-older']);
    const before = await updatedAt('order-older');
    await new Promise((resolve) => setTimeout(resolve, 5));
    const ref = { workflowId: 'order-older', delegationId: 'first.1' };
    await producer.journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'task-order', contextId: 'context-order', statusMessage: { role: 'ROLE_AGENT', messageId: 'q-order', parts: [{ text: 'which?' }] } } as Parameters<Producer['journal']['applyStatus']>[1]);
    const asked = await updatedAt('order-older');
    expect(asked).toBeGreaterThan(before);
    expect((await producer.get('order-older')).updatedAt).toBe(new Date(asked).toISOString());
    expect(await listed()).toEqual(['order-older', 'order-newer']);
    // A re-read that changes nothing does not move it; a new state does.
    await producer.journal.applyStatus(ref, { mode: 'snapshot', state: 'INPUT_REQUIRED', taskId: 'task-order' } as Parameters<Producer['journal']['applyStatus']>[1]);
    expect(await updatedAt('order-older')).toBe(asked);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await producer.journal.applyStatus(ref, { mode: 'outcome', state: 'COMPLETED', taskId: 'task-order' } as Parameters<Producer['journal']['applyStatus']>[1]);
    expect(await updatedAt('order-older')).toBeGreaterThan(asked);
  });
});

describe('the agent routes serve every agent view', () => {
  it('active, disabled (with and without a reason), unavailable, with and without health and limits: GET /v1/agents and /v1/agents/:id are the views, field for field', async () => {
    const registry = new AgentRegistry(producer.journal.redis, { prefix: PREFIX });
    const card = { name: 'Agent', description: '', version: '1', skills: [{ id: 'book', name: 'Book', description: '', tags: ['x'] }], capabilities: { streaming: true }, interfaces: [{ url: 'http://127.0.0.1:9/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] };
    const urls = ['http://127.0.0.1:9/', 'http://127.0.0.1:10/', 'http://127.0.0.1:11/', 'http://127.0.0.1:12/'];
    for (const url of urls) await registry.register(url, card);
    await registry.setDisabled(urls[1]!, true, 'maintenance');
    await registry.setDisabled(urls[2]!, true);
    await registry.markUnavailable(urls[3]!, 'NO_USABLE_INTERFACE: none');
    await registry.recordCall(urls[0]!, { kind: 'card' });
    await registry.recordCall(urls[0]!, { kind: 'send', error: 'ECONNREFUSED' });
    await registry.recordCall(urls[1]!, { kind: 'card', error: 'HTTP 503' });
    await registry.setLimits(urls[0]!, { maxInFlight: 4, rate: { sendsPerSecond: 2.5, resubscribesPerSecond: 1 } });
    await registry.setLimits(urls[1]!, { rate: { sendsPerSecond: 1 } });
    const views = JSON.parse(JSON.stringify(await producer.listAgents()));
    expect(views).toHaveLength(4);
    const listed = await authorized(app, { method: 'GET', url: '/v1/agents' });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json()).toEqual({ agents: views });
    for (const view of views) {
      const one = await authorized(app, { method: 'GET', url: `/v1/agents/${view.id}` });
      expect(one.statusCode, one.body).toBe(200);
      expect(one.json()).toEqual(view);
    }
  });

  it('PUT and DELETE /v1/agents/:id/limits answer the view, field for field; the tenant weight routes their documented shapes', async () => {
    const [first] = (await producer.listAgents()).filter((agent) => agent.limits === null);
    expect(first).toBeDefined();
    const set = await authorized(app, { method: 'PUT', url: `/v1/agents/${first!.id}/limits`, payload: { maxInFlight: 2, rate: { resubscribesPerSecond: 0.25 } } });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toEqual(JSON.parse(JSON.stringify(await producer.getAgent(first!.id))));
    const cleared = await authorized(app, { method: 'DELETE', url: `/v1/agents/${first!.id}/limits` });
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect(cleared.json()).toEqual(JSON.parse(JSON.stringify(await producer.getAgent(first!.id))));
    expect((await authorized(app, { method: 'PUT', url: '/v1/tenants/acme/weight', payload: { weight: 7 } })).json()).toEqual({ tenant: 'acme', weight: 7, set: true });
    expect((await authorized(app, { method: 'GET', url: '/v1/tenants/weights' })).json()).toEqual({ weights: { acme: 7 }, defaultWeight: 1 });
  });
});
