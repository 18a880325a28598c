import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';
import { queuePrefix } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completesWith, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { TEST_API_TOKEN, authorized, signIn, startTestServer } from '../harness/api-server.ts';
import { captureLogs } from '../harness/log-capture.ts';

const redisServer = useRedisServer();
const PREFIX = 'api';
let app: ApiServer;
let fleet: Fleet;
let agent: DemoAgentHandle;
let asking: DemoAgentHandle;

beforeAll(async () => {
  agent = await startDemoAgent({ behaviour: completesWith('Hello from the API') });
  asking = await startDemoAgent({ behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked ${answer}`)) });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
  await app.ready();
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await agent?.close();
  await asking?.close();
});

const workflow = (workflowId: string) => ({ workflowId, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'hello' } }] });

async function stateOf(id: string): Promise<{ state: string; steps: { attempts: { state: string; resultText?: string }[] }[]; openQuestions: { step: string; text: string }[] }> {
  return (await authorized(app, { method: 'GET', url: `/v1/workflows/${id}` })).json();
}

describe('auth', () => {
  it.each([
    ['no token', {}],
    ['a wrong token', { authorization: 'Bearer wrong-token' }],
    ['a token of another length', { authorization: `Bearer ${TEST_API_TOKEN}x` }],
    ['another scheme', { authorization: `Basic ${Buffer.from(`u:${TEST_API_TOKEN}`).toString('base64')}` }],
  ])('401 problem+json with %s', async (_name, headers) => {
    const response = await app.inject({ method: 'GET', url: '/v1/workflows', headers });
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.headers['www-authenticate']).toBe('Bearer');
    expect(response.json()).toMatchObject({ status: 401, code: 'UNAUTHORIZED', title: expect.any(String), type: expect.any(String) });
  });

  it('401 before the body is validated or anything is written', async () => {
    const response = await app.inject({ method: 'POST', url: '/v1/workflows', payload: workflow('never-written') });
    expect(response.statusCode).toBe(401);
    expect((await authorized(app, { method: 'GET', url: '/v1/workflows/never-written' })).statusCode).toBe(404);
  });
});

describe('workflows', () => {
  it('POST /v1/workflows twice: 201 then 200 with the same id', async () => {
    const first = await authorized(app, { method: 'POST', url: '/v1/workflows', payload: workflow('wf-idem') });
    expect(first.statusCode).toBe(201);
    expect(first.json()).toMatchObject({ id: 'wf-idem', created: true });
    const second = await authorized(app, { method: 'POST', url: '/v1/workflows', payload: workflow('wf-idem') });
    expect(second.statusCode).toBe(200);
    expect(second.json()).toMatchObject({ id: 'wf-idem', created: false });
  });

  it('an invalid body is a 400 problem naming the field', async () => {
    const response = await authorized(app, {
      method: 'POST',
      url: '/v1/workflows',
      payload: { workflowId: 'bad id with spaces', steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'x' } }] },
    });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ status: 400, code: 'INVALID_INPUT', field: 'workflowId' });
  });

  it('malformed JSON is a 400 problem, not a 500', async () => {
    const response = await authorized(app, { method: 'POST', url: '/v1/workflows', payload: '{"workflowId":', headers: { 'content-type': 'application/json' } });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('GET an unknown workflow: 404 problem', async () => {
    const response = await authorized(app, { method: 'GET', url: '/v1/workflows/nope' });
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it('lists workflows, paged', async () => {
    for (const id of ['list-1', 'list-2', 'list-3']) await authorized(app, { method: 'POST', url: '/v1/workflows', payload: workflow(id) });
    // The order is updatedAt, which every attempt's change of state moves: a workflow that moves while
    // being paged goes back to the first page (keyset paging skips no row that did not move). Page once they rest.
    await eventually(async () => (await Promise.all(['list-1', 'list-2', 'list-3'].map(stateOf))).every((view) => view.state === 'COMPLETED'), 'the three workflows completed');
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const response = await authorized(app, { method: 'GET', url: `/v1/workflows?limit=1${cursor ? `&cursor=${cursor}` : ''}` });
      expect(response.statusCode).toBe(200);
      const page = response.json<{ ids: string[]; cursor?: string }>();
      page.ids.forEach((id) => seen.add(id));
      cursor = page.cursor;
    } while (cursor);
    expect([...seen]).toEqual(expect.arrayContaining(['list-1', 'list-2', 'list-3']));
    const bad = await authorized(app, { method: 'GET', url: '/v1/workflows?limit=0' });
    expect(bad.json()).toMatchObject({ code: 'INVALID_INPUT', field: 'limit' });
  });
});

describe('F34: deep JSON at the API is a 400, at the depth the workers accept back', () => {
  /** A delegation body whose metadata nests `depth` objects (written as text: no recursion on our side). */
  const body = (idempotencyKey: string, depth: number) =>
    `{"agent":${JSON.stringify(agent.cardUrl)},"text":"deep","idempotencyKey":"${idempotencyKey}","metadata":${'{"a":'.repeat(depth)}"leaf"${'}'.repeat(depth)}}`;
  it.each([5_000, 59])('metadata nested %i deep: 400 with the limit named, nothing journaled', async (depth) => {
    const idempotencyKey = `api-deep-${depth}`;
    const response = await authorized(app, { method: 'POST', url: '/v1/delegations', headers: { 'content-type': 'application/json' }, payload: body(idempotencyKey, depth) });
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json()).toMatchObject({ code: 'INVALID_INPUT', detail: 'JSON nested deeper than 59 levels' });
    expect((await authorized(app, { method: 'GET', url: `/v1/workflows/${idempotencyKey}` })).statusCode).toBe(404);
  });
  it("metadata nested 40 deep is accepted (an agent's echo of it stays within the workers' 64)", async () => {
    const response = await authorized(app, { method: 'POST', url: '/v1/delegations', headers: { 'content-type': 'application/json' }, payload: body('api-deep-40', 40) });
    expect(response.statusCode, response.body).toBeLessThan(300);
  });
});

describe('delegations through the API, with a running fleet', () => {
  it('a delegation reaches COMPLETED', async () => {
    const created = await authorized(app, { method: 'POST', url: '/v1/delegations', payload: { agent: agent.cardUrl, text: 'say hello', idempotencyKey: 'api-deleg-1' } });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ id: 'api-deleg-1', created: true, messageId: expect.any(String) });
    const again = await authorized(app, { method: 'POST', url: '/v1/delegations', payload: { agent: agent.cardUrl, text: 'say hello', idempotencyKey: 'api-deleg-1' } });
    expect(again.statusCode).toBe(200);
    const done = await eventually(async () => {
      const view = await stateOf('api-deleg-1');
      return view.state === 'COMPLETED' && view;
    }, 'delegation completed');
    expect(done.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', resultText: 'Hello from the API' });
    expect(agent.sendMessageCount(created.json<{ messageId: string }>().messageId)).toBe(1);
  });

  it('reply to an INPUT_REQUIRED agent completes the step', async () => {
    await authorized(app, { method: 'POST', url: '/v1/delegations', payload: { agent: asking.cardUrl, text: 'book a trip', idempotencyKey: 'api-ask-1' } });
    const parked = await eventually(async () => {
      const view = await stateOf('api-ask-1');
      return view.openQuestions.length > 0 && view;
    }, 'open question');
    expect(parked.openQuestions[0]).toMatchObject({ step: 'main', text: 'Which city?' });
    const reply = await authorized(app, { method: 'POST', url: '/v1/workflows/api-ask-1/steps/main/reply', payload: { text: 'Lisbon' } });
    expect(reply.statusCode).toBe(202);
    const done = await eventually(async () => {
      const view = await stateOf('api-ask-1');
      return view.state === 'COMPLETED' && view;
    }, 'completed after the reply');
    expect(done.steps[0]!.attempts.at(-1)).toMatchObject({ state: 'COMPLETED', resultText: 'booked Lisbon' });
  });

  it('reply without an open question: 409 NO_OPEN_QUESTION; reply with both text and parts: 400', async () => {
    await authorized(app, { method: 'POST', url: '/v1/workflows', payload: workflow('no-question') });
    await eventually(async () => (await stateOf('no-question')).state === 'COMPLETED', 'completed');
    const none = await authorized(app, { method: 'POST', url: '/v1/workflows/no-question/steps/main/reply', payload: { text: 'hi' } });
    expect(none.statusCode).toBe(409);
    expect(none.json()).toMatchObject({ code: 'NO_OPEN_QUESTION' });
    const both = await authorized(app, { method: 'POST', url: '/v1/workflows/no-question/steps/main/reply', payload: { text: 'hi', parts: [{ text: 'hi' }] } });
    expect(both.json()).toMatchObject({ status: 400, code: 'INVALID_INPUT', field: 'text' });
  });

  it('cancel: 202, and 404 for an unknown workflow', async () => {
    const unknown = await authorized(app, { method: 'POST', url: '/v1/workflows/unknown-wf/cancel' });
    expect(unknown.statusCode).toBe(404);
    await authorized(app, { method: 'POST', url: '/v1/workflows', payload: workflow('to-cancel') });
    const cancel = await authorized(app, { method: 'POST', url: '/v1/workflows/to-cancel/cancel' });
    expect(cancel.statusCode).toBe(202);
  });

  it('registers and lists agents', async () => {
    const registered = await authorized(app, { method: 'POST', url: '/v1/agents', payload: { cardUrl: agent.cardUrl } });
    expect(registered.statusCode).toBe(201);
    const list = await authorized(app, { method: 'GET', url: '/v1/agents' });
    expect(list.json<{ agents: unknown[] }>().agents).toHaveLength(1);
    const bad = await authorized(app, { method: 'POST', url: '/v1/agents', payload: { cardUrl: 'ftp://x' } });
    expect(bad.json()).toMatchObject({ code: 'INVALID_INPUT', field: 'cardUrl' });
  });
});

describe('operations endpoints', () => {
  it('/openapi.json lists the /v1 paths', async () => {
    const response = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json<{ openapi: string; paths: Record<string, Record<string, unknown>> }>();
    expect(document.openapi).toMatch(/^3\./);
    for (const path of ['/v1/workflows', '/v1/delegations', '/v1/workflows/{id}', '/v1/workflows/{id}/steps/{step}/reply', '/v1/workflows/{id}/cancel', '/v1/agents', '/v1/push/{workflowId}/{delegationId}']) {
      expect(Object.keys(document.paths)).toContain(path);
    }
    expect(document.paths['/v1/workflows']!.post).toMatchObject({ requestBody: expect.anything() });
    expect(Object.keys(document.paths).some((path) => path.startsWith('/admin'))).toBe(false);
  });

  it("/openapi.json carries the producer package's version and licence", async () => {
    const info = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{ info: { version: string; license: { name: string } } }>().info;
    const packageJson = JSON.parse(readFileSync(new URL('../../packages/producer/package.json', import.meta.url), 'utf8')) as { version: string; license: string };
    expect(info.version).toBe(packageJson.version);
    expect(info.license.name).toBe(packageJson.license);
    expect(info.license.name).toBe('Apache-2.0');
  });

  it('/metrics is Prometheus text with the queue depth of all five queues', async () => {
    // A job parked an hour ahead (completed jobs are removed at once, so a delayed one is the count to see).
    const send = new Queue('send', { connection: { url: redisServer().url }, prefix: queuePrefix(PREFIX) });
    const parked = await send.add('parked', { workflowId: 'metrics-probe', delegationId: 'main.1', kind: 'message' }, { delay: 3_600_000 });
    const response = await app.inject({ method: 'GET', url: '/metrics' });
    await parked.remove();
    await send.close();
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const sample = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? (-?[0-9.]+(e[+-]?[0-9]+)?|NaN|[+-]Inf)( -?[0-9]+)?$/;
    const lines = response.body.split('\n').filter(Boolean);
    for (const line of lines) {
      if (line.startsWith('#')) expect(line).toMatch(/^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* /);
      else expect(line).toMatch(sample);
    }
    for (const queue of ['send', 'follow', 'reconcile', 'verify', 'compensate']) {
      expect(response.body).toMatch(new RegExp(`^durable_a2a_queue_jobs\\{queue="${queue}",status="waiting"\\} \\d+$`, 'm'));
      // Jobs are removed on completion: a `completed` series would always be 0.
      expect(response.body).not.toContain(`durable_a2a_queue_jobs{queue="${queue}",status="completed"}`);
    }
    expect(response.body).toMatch(/^durable_a2a_queue_jobs\{queue="send",status="delayed"\} [1-9]\d*$/m);
    expect(response.body).toMatch(/^durable_a2a_open_questions \d+$/m);
  });

  it('/healthz and /readyz', async () => {
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ ready: true, redis: true });
  });

  it('unknown routes answer a 404 problem', async () => {
    const response = await app.inject({ method: 'GET', url: '/nothing-here' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('logging', () => {
  it('request logs carry neither the Authorization header nor a ?token= value', async () => {
    const logs = captureLogs({ level: 'trace' });
    const logged = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, logger: logs.logger });
    await logged.ready();
    await authorized(logged, { method: 'GET', url: '/v1/workflows' });
    await logged.inject({ method: 'GET', url: '/v1/workflows', headers: { authorization: 'Bearer wrong-secret-value' } });
    await logged.inject({ method: 'GET', url: `/admin/queues?token=${TEST_API_TOKEN}` });
    await signIn(logged); // the token in a form body is never logged either
    await logged.close();
    const output = logs.rawLines.join('\n');
    expect(output).toContain('/v1/workflows');
    expect(output).toContain('/admin/queues?[redacted]'); // name and value: a parameter outside the listing ones is never logged
    expect(output).not.toContain(TEST_API_TOKEN);
    expect(output).not.toContain('wrong-secret-value');
    expect(output.toLowerCase()).not.toContain('authorization');
  });
});

describe('logging an agent fault', () => {
  it('a 502 AGENT_CARD_UNREACHABLE is one warn line without a stack (the agent is at fault, not the service)', async () => {
    const logs = captureLogs({ level: 'trace' });
    const logged = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, logger: logs.logger });
    await logged.ready();
    const response = await authorized(logged, { method: 'POST', url: '/v1/agents', payload: { cardUrl: 'http://127.0.0.1:1/' } });
    await logged.close();
    expect(response.statusCode).toBe(502);
    const records = logs.lines;
    const about = records.filter((record) => record.msg !== 'request' && JSON.stringify(record).includes('AGENT_CARD_UNREACHABLE'));
    expect(about).toHaveLength(1);
    expect(about[0]!.level).toBe(40); // warn
    expect(JSON.stringify(records.filter((record) => record.level >= 50))).toBe('[]');
    expect(JSON.stringify(about[0])).not.toContain('stack');
  });
});
