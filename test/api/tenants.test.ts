/**
 * Tenants over the HTTP service (docs/tenants.md): every route, walked from the server's own route table, answers a
 * token of another tenant as if the record did not exist (404, or an empty list) and changes nothing of it; idempotency
 * keys are per tenant; an operator sees every tenant; a viewer writes nothing; a record from before tenants reads as
 * the `default` tenant's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { routeTable, type ApiServer, type InjectOptions, type InjectResponse } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { Journal, queuePrefix } from '@durable-a2a/shared';
import { Queue } from 'bullmq';
import { NotFoundError, createProducer } from '@durable-a2a/producer';
import { EXIT_CODES, run } from '@durable-a2a/cli';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { listenOnLoopback, signIn, startTestServer } from '../harness/api-server.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);
const PREFIX = 'tenants';

/** One token per tenant and role; `ops` is named by no tenant entry: the default tenant's operator, as before tenants. */
const TOKENS = {
  ops: 'ops-token-0123456789',
  blue: 'blue-service-token-0123456789',
  red: 'red-service-token-0123456789',
  redViewer: 'red-viewer-token-0123456789',
  plain: 'default-service-token-0123456789',
} as const;
const TENANTS = {
  tokens: {
    blue: { tenant: 'blue', role: 'service' as const },
    red: { tenant: 'red', role: 'service' as const },
    redViewer: { tenant: 'red', role: 'viewer' as const },
    plain: { tenant: 'default', role: 'service' as const },
  },
};

let app: ApiServer;
let baseUrl: string;
let agent: DemoAgentHandle;
let fleet: Fleet | undefined;
let agentId: string;
/** The victims: a blue workflow and a default one, each parked on an open question; a blue front-door task. */
const victims = { blue: 'blue~trip', plain: 'trip-plain', frontDoor: '' };

const as = (token: keyof typeof TOKENS, request: InjectOptions): Promise<InjectResponse> =>
  app.inject({ ...request, headers: { authorization: `Bearer ${TOKENS[token]}`, ...request.headers } });

const workflowOf = (workflowId: string) => ({ workflowId, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'book a trip' } }] });

/** Every key of a workflow's hash tag, with its content: what "nothing changed" compares. */
async function snapshot(workflowId: string): Promise<Record<string, unknown>> {
  const keys = (await redis().keys(`${PREFIX}:{wf:${workflowId}}*`)).sort();
  const entries = await Promise.all(
    keys.map(async (key) => {
      const type = await redis().type(key);
      if (type === 'hash') return [key, await redis().hgetall(key)];
      if (type === 'list') return [key, await redis().lrange(key, 0, -1)];
      if (type === 'zset') return [key, await redis().zrange(key, 0, -1, 'WITHSCORES')];
      return [key, await redis().get(key)];
    }),
  );
  return Object.fromEntries(entries);
}

async function jsonRpc(token: keyof typeof TOKENS, method: string, params: unknown): Promise<{ result?: { id?: string; task?: { id: string }; tasks?: { id: string }[] }; error?: { code: number; message: string } }> {
  const response = await fetch(`${baseUrl}/a2a`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKENS[token]}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await response.json()) as never;
}

beforeAll(async () => {
  agent = await startDemoAgent({ name: 'Trip agent', skills: [{ id: 'trip', name: 'trip', description: 'books trips', tags: ['test'] }], behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked ${answer}`)) });
  app = startTestServer({
    redisUrl: redisServer().url,
    prefix: PREFIX,
    apiTokens: Object.entries(TOKENS).map(([name, token]) => `${name}:${token}`),
    tenants: TENANTS,
    answerLinks: { secret: 'an answer link secret of 32 chars!', baseUrl: 'http://127.0.0.1' },
  });
  baseUrl = await listenOnLoopback(app);
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
  const registered = await as('ops', { method: 'POST', url: '/v1/agents', payload: { cardUrl: agent.cardUrl } });
  expect(registered.statusCode).toBe(201);
  agentId = (registered.json() as { id: string }).id;
  expect((await as('blue', { method: 'POST', url: '/v1/workflows', payload: workflowOf('trip') })).json()).toMatchObject({ id: victims.blue, created: true });
  expect((await as('plain', { method: 'POST', url: '/v1/workflows', payload: workflowOf(victims.plain) })).json()).toMatchObject({ id: victims.plain, created: true });
  const sent = await jsonRpc('blue', 'SendMessage', { message: { messageId: 'fd-1', role: 'ROLE_USER', parts: [{ text: 'a trip' }] }, configuration: { returnImmediately: true } });
  victims.frontDoor = sent.result!.task!.id;
  expect(victims.frontDoor).toMatch(/^blue~a2a-/);
  for (const [token, id] of [['blue', victims.blue], ['plain', victims.plain], ['blue', victims.frontDoor]] as const) {
    await eventually(async () => ((await as(token, { method: 'GET', url: `/v1/workflows/${id}` })).json() as { openQuestions: unknown[] }).openQuestions.length > 0, `${id} asks`);
  }
  // From here the journal stands still: what changes is what a request changed.
  await fleet.close();
  fleet = undefined;
}, 60_000);
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await agent?.close();
});

/** What a route is, for a caller of another tenant (the table must name every route: a new one fails until classified). */
type RouteKind = 'record' | 'list' | 'create' | 'bulk' | 'registry' | 'front-door' | 'operators' | 'own-credentials' | 'public';
const ROUTE_KINDS: [RegExp, RouteKind][] = [
  [/^(GET|POST) \/v1\/workflows\/:id(\/|$)/, 'record'],
  [/^(GET|POST) \/ui\/workflows\/:id(\/|$)/, 'record'],
  [/^GET \/v1\/(workflows|questions)$/, 'list'],
  [/^GET \/ui(\/panel)?$/, 'list'],
  [/^POST \/v1\/(workflows|delegations)$/, 'create'],
  [/^(GET|POST) \/ui\/bulk$/, 'bulk'],
  [/^POST \/v1\/bulk\/workflows\/:action$/, 'bulk'],
  // The registry and the fleet's flow control (agent limits, tenant weights) are shared: read by all, changed by operators.
  [/ \/v1\/(agents|tenants)(\/|$)/, 'registry'],
  [/^(GET|POST) \/ui\/agents(\/|$)/, 'registry'],
  [/ \/a2a(\/\*)?$/, 'front-door'],
  [/ \/admin\/queues(\/|$)/, 'operators'],
  [/^POST \/v1\/push\//, 'own-credentials'],
  [/^(GET|POST) \/answer\/\*$/, 'own-credentials'],
  [/^(GET|POST) \/ui\/(sign-in|sign-out|assets\/)/, 'public'],
  [/^GET \/(metrics|healthz|readyz|openapi\.json|\.well-known\/agent-card\.json)$/, 'public'],
];
const kindOf = (route: string): RouteKind | undefined => ROUTE_KINDS.find(([pattern]) => pattern.test(route))?.[1];

/** The attackers: a service and a viewer of another tenant, and (against the default tenant's record) blue's service. */
const ATTACKS = [
  { token: 'red', victim: 'blue' },
  { token: 'redViewer', victim: 'blue' },
  { token: 'red', victim: 'plain' },
  { token: 'blue', victim: 'plain' },
] as const;

/** The requests a route is tried with: its parameters filled with the victim's ids, its body a plausible one. */
function requestsOf(method: string, url: string, victimId: string): { method: string; url: string; payload?: unknown; headers?: Record<string, string> }[] {
  // Searches name the victim: its id (without the tenant) as a prefix, its tenant.
  const [victimTenant, local] = victimId.includes('~') ? (victimId.split('~') as [string, string]) : ['default', victimId];
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  if (url.startsWith('/v1/agents')) return [{ method, url: url.replace(':id', agentId), ...(method === 'POST' || method === 'PUT' ? { payload: url === '/v1/agents' ? { cardUrl: agent.cardUrl } : url.endsWith('/limits') ? { maxInFlight: 1 } : {} } : {}) }];
  if (url.startsWith('/v1/tenants')) return [{ method, url: url.replace(':tenant', victimTenant), ...(method === 'PUT' ? { payload: { weight: 9 } } : {}) }];
  if (url === '/ui/agents/limits') return [{ method, url, payload: `agent=${agentId}&maxInFlight=1`, headers: form }];
  const path = url.replace(':id', encodeURIComponent(victimId)).replace(':step', 'main').replace(':action', 'cancel').replace(':workflowId', encodeURIComponent(victimId)).replace(':delegationId', 'main.1');
  if (url.startsWith('/ui/') && method === 'POST') return [{ method, url: path, payload: 'text=Paris&action=abandon', headers: form }];
  if (url.endsWith('/reply')) return [{ method, url: path, payload: { text: 'Paris' } }];
  if (url.endsWith('/resolve')) return [{ method, url: path, payload: { action: 'abandon' } }];
  if (url === '/v1/bulk/workflows/:action') return [{ method, url: path, payload: { filter: { idPrefix: local } } }, { method, url: path, payload: { filter: { tenant: victimTenant, state: 'RUNNING' } } }];
  if (url === '/ui/bulk') return [{ method, url: `${path}?action=cancel&idPrefix=${local}&preview=1`, payload: method === 'POST' ? `action=cancel&idPrefix=${local}` : undefined, headers: form }];
  if (url === '/v1/workflows' && method === 'GET') return [{ method, url: path }, { method, url: `${path}?idPrefix=${local}` }, { method, url: `${path}?tenant=${victimTenant}` }, { method, url: `${path}?waiting=true` }];
  if (url === '/v1/questions') return [{ method, url: path }, { method, url: `${path}?tenant=${victimTenant}` }];
  if (url === '/v1/workflows' || url === '/v1/delegations') return [{ method, url: path, payload: url === '/v1/workflows' ? workflowOf('trip') : { agent: agent.cardUrl, text: 'x', idempotencyKey: 'trip' } }];
  if (url.endsWith('/*')) return [{ method, url: url.replace('/*', `/${encodeURIComponent(victimId)}`) }];
  return [{ method, url: path, ...(method === 'POST' || method === 'PUT' || method === 'PATCH' ? { payload: {} } : {}) }];
}

describe('every route, with a token of another tenant', () => {
  it('answers 404 (or an empty list) and changes nothing of the other tenant’s workflows', async () => {
    const routes = routeTable(app).map(({ method, url }) => ({ method, url, route: `${method} ${url}` }));
    expect(routes.length).toBeGreaterThan(40);
    expect(routes.filter(({ route }) => kindOf(route) === undefined).map(({ route }) => route)).toEqual([]);
    const before = { blue: await snapshot(victims.blue), plain: await snapshot(victims.plain), frontDoor: await snapshot(victims.frontDoor) };
    const failures: string[] = [];
    for (const { token, victim } of ATTACKS) {
      const victimId = victims[victim];
      for (const { method, url, route } of routes) {
        const kind = kindOf(route)!;
        if (kind === 'front-door') continue; // the A2A surface is walked by its own test below
        for (const request of requestsOf(method, url, victimId)) {
          const response = await as(token, request as never);
          const seen = `${token} → ${request.method} ${request.url}: ${response.statusCode}`;
          // Nothing of the victim in any answer, whatever the route (no existence leak); the bulk page echoes the
          // form's id prefix, so there a link to the workflow is what would show it.
          const shown = url === '/ui/bulk' ? response.body.includes(`workflows/${encodeURIComponent(victimId)}`) : response.body.includes(victimId);
          if (shown && !(kind === 'record' && response.statusCode === 404)) failures.push(`${seen} shows ${victimId}`);
          if (kind === 'record' && response.statusCode !== 404) failures.push(`${seen}, expected 404`);
          if (kind === 'list' && response.statusCode !== 200) failures.push(`${seen}, expected 200 (an empty list)`);
          if (kind === 'bulk' && response.statusCode >= 500) failures.push(`${seen}`);
          if (kind === 'operators' && response.statusCode !== 401) failures.push(`${seen}, expected 401 (operators only)`);
          if (kind === 'own-credentials' && response.statusCode < 400) failures.push(`${seen}, expected a refusal`);
          if (kind === 'registry' && method !== 'GET' && response.statusCode !== 403) failures.push(`${seen}, expected 403 (operators only)`);
          if (kind === 'registry' && method === 'GET' && response.statusCode >= 500) failures.push(seen);
          if (kind === 'create' && response.statusCode === 201 && (response.json() as { id: string }).id === victimId) failures.push(`${seen} answered the victim's workflow`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect({ blue: await snapshot(victims.blue), plain: await snapshot(victims.plain), frontDoor: await snapshot(victims.frontDoor) }).toEqual(before);
  }, 120_000);

  it('the A2A front door: another tenant’s task is not found, not listed, not cancelled, not answered', async () => {
    const before = await snapshot(victims.frontDoor);
    for (const local of [victims.frontDoor, victims.frontDoor.slice('blue~'.length)]) {
      expect((await jsonRpc('red', 'GetTask', { id: local })).error?.code).toBe(-32001);
      expect((await jsonRpc('red', 'CancelTask', { id: local })).error?.code).toBe(-32001);
      expect((await jsonRpc('red', 'SendMessage', { message: { messageId: 'fd-2', taskId: local, role: 'ROLE_USER', parts: [{ text: 'Paris' }] } })).error?.code).toBe(-32001);
    }
    expect((await jsonRpc('red', 'ListTasks', {})).result?.tasks ?? []).toEqual([]);
    expect(await snapshot(victims.frontDoor)).toEqual(before);
    // Its owner still reads it, by the id it was given.
    expect((await jsonRpc('blue', 'GetTask', { id: victims.frontDoor })).result?.id).toBe(victims.frontDoor);
  });
});

describe('the CLI through the API', () => {
  const cli = async (token: keyof typeof TOKENS, argv: string[]) => {
    let stdout = '';
    const code = await run(argv, { stdout: (text) => (stdout += text), stderr: () => undefined, env: { DURABLE_A2A_URL: baseUrl, DURABLE_A2A_TOKEN: TOKENS[token] } });
    return { code, stdout };
  };

  it('another tenant’s workflow is not found (exit 3) and not listed; its owner and operators see it', async () => {
    expect((await cli('red', ['show', victims.blue])).code).toBe(EXIT_CODES.NOT_FOUND);
    expect((await cli('red', ['cancel', victims.blue])).code).toBe(EXIT_CODES.NOT_FOUND);
    expect((await cli('red', ['workflows', 'search', '--where', 'idPrefix=trip'])).stdout).not.toContain(victims.blue);
    expect((await cli('blue', ['show', 'trip'])).code).toBe(EXIT_CODES.OK);
    const operator = await cli('ops', ['--json', 'workflows', 'search', '--where', 'tenant=blue']);
    expect(operator.stdout).toContain(victims.blue);
    expect(operator.stdout).not.toContain(victims.plain);
  });
});

describe('/ui through a session', () => {
  it('a person signed in with a service token sees their tenant only, and Bull Board (every tenant’s jobs) not at all', async () => {
    const cookie = await signIn(app, TOKENS.red);
    const page = await app.inject({ method: 'GET', url: '/ui', headers: { cookie } });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain(victims.blue);
    expect((await app.inject({ method: 'GET', url: `/ui/workflows/${victims.blue}`, headers: { cookie } })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { cookie } })).statusCode).toBe(401);
    const blueCookie = await signIn(app, TOKENS.blue);
    expect((await app.inject({ method: 'GET', url: '/ui/workflows/trip', headers: { cookie: blueCookie } })).statusCode).toBe(200);
    const operatorCookie = await signIn(app, TOKENS.ops);
    expect((await app.inject({ method: 'GET', url: '/ui', headers: { cookie: operatorCookie } })).body).toContain(victims.blue);
    expect((await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { cookie: operatorCookie } })).statusCode).toBe(200);
  });
});

describe('idempotency keys are per tenant', () => {
  it('two tenants use the same key independently; the same tenant and key is the same workflow', async () => {
    const body = (text: string) => ({ agent: agent.cardUrl, text, idempotencyKey: 'order-7' });
    const blue = await as('blue', { method: 'POST', url: '/v1/delegations', payload: body('blue order') });
    const red = await as('red', { method: 'POST', url: '/v1/delegations', payload: body('red order') });
    expect([blue.statusCode, red.statusCode]).toEqual([201, 201]);
    expect([blue.json().id, red.json().id]).toEqual(['blue~order-7', 'red~order-7']);
    const again = await as('blue', { method: 'POST', url: '/v1/delegations', payload: body('blue order') });
    expect([again.statusCode, again.json().id]).toEqual([200, 'blue~order-7']);
    expect((await as('blue', { method: 'POST', url: '/v1/delegations', payload: body('another order') })).statusCode).toBe(409);
    // Each reads its own by the key it chose, and the journal holds two workflows, each recording its tenant.
    expect((await as('red', { method: 'GET', url: '/v1/workflows/order-7' })).json()).toMatchObject({ workflowId: 'red~order-7', tenant: 'red' });
    const journal = new Journal(redis(), { prefix: PREFIX });
    expect(await redis().hget(journal.keys.workflow('blue~order-7'), 'tenant')).toBe('blue');
    expect(await redis().hget(journal.keys.delegation('red~order-7', 'main.1'), 'tenant')).toBe('red');
  });
});

describe('roles', () => {
  it('an operator sees every tenant, and can narrow a listing to one', async () => {
    const all = (await as('ops', { method: 'GET', url: '/v1/workflows?limit=500' })).json() as { ids: string[] };
    expect(all.ids).toEqual(expect.arrayContaining([victims.blue, victims.plain, victims.frontDoor]));
    const blue = (await as('ops', { method: 'GET', url: '/v1/workflows?limit=500&tenant=blue' })).json() as { workflows: { tenant: string }[] };
    expect(blue.workflows.length).toBeGreaterThan(0);
    expect(new Set(blue.workflows.map(({ tenant }) => tenant))).toEqual(new Set(['blue']));
    expect((await as('ops', { method: 'GET', url: `/v1/workflows/${victims.blue}` })).json()).toMatchObject({ tenant: 'blue' });
    const questions = (await as('ops', { method: 'GET', url: '/v1/questions' })).json() as { questions: { workflowId: string }[] };
    expect(questions.questions.map(({ workflowId }) => workflowId)).toEqual(expect.arrayContaining([victims.blue, victims.plain]));
  });

  it('a service sees its own tenant only: its listing and questions hold its workflows alone', async () => {
    const listing = (await as('blue', { method: 'GET', url: '/v1/workflows?limit=500' })).json() as { ids: string[] };
    expect(listing.ids).toContain(victims.blue);
    expect(listing.ids.every((id) => id.startsWith('blue~'))).toBe(true);
    const questions = (await as('blue', { method: 'GET', url: '/v1/questions' })).json() as { questions: { workflowId: string }[] };
    expect(questions.questions.length).toBeGreaterThan(0);
    expect(questions.questions.every(({ workflowId }) => workflowId.startsWith('blue~'))).toBe(true);
  });

  it('a viewer reads its tenant’s workflows and writes nothing (403), its tenant’s records still there', async () => {
    expect((await as('red', { method: 'POST', url: '/v1/workflows', payload: workflowOf('red-own') })).statusCode).toBe(201);
    const before = await snapshot('red~red-own');
    expect((await as('redViewer', { method: 'GET', url: '/v1/workflows/red-own' })).statusCode).toBe(200);
    for (const request of [
      { method: 'POST', url: '/v1/workflows', payload: workflowOf('viewer-made') },
      { method: 'POST', url: '/v1/delegations', payload: { agent: agent.cardUrl, text: 'x' } },
      { method: 'POST', url: '/v1/workflows/red-own/cancel' },
      { method: 'POST', url: '/v1/workflows/red-own/resolve', payload: { action: 'abandon' } },
      { method: 'POST', url: '/v1/workflows/red-own/steps/main/reply', payload: { text: 'Paris' } },
      { method: 'POST', url: '/v1/bulk/workflows/cancel', payload: { filter: { idPrefix: 'red' } } },
    ]) {
      const response = await as('redViewer', request as never);
      expect({ request: request.url, status: response.statusCode, code: response.json().code }).toEqual({ request: request.url, status: 403, code: 'FORBIDDEN' });
    }
    expect((await as('redViewer', { method: 'POST', url: '/v1/bulk/workflows/cancel', payload: { filter: { idPrefix: 'red' }, dryRun: true } })).statusCode).toBe(200);
    expect((await as('redViewer', { method: 'GET', url: '/v1/workflows/viewer-made' })).statusCode).toBe(404);
    expect(await snapshot('red~red-own')).toEqual(before);
  });
});

describe('records from before tenants', () => {
  it('a workflow without a tenant field reads as the default tenant’s', async () => {
    const journal = new Journal(redis(), { prefix: PREFIX });
    const id = 'from-before';
    await journal.createWorkflow(id, { state: 'RUNNING', definition: JSON.stringify(workflowOf(id)), createdAt: '1000', updatedAt: '1000' }, intentRow(id));
    // What an earlier release wrote: no tenant on either row.
    await redis().hdel(journal.keys.workflow(id), 'tenant');
    await redis().hdel(journal.keys.delegation(id, 'main.1'), 'tenant');
    expect((await as('plain', { method: 'GET', url: `/v1/workflows/${id}` })).json()).toMatchObject({ workflowId: id, tenant: 'default' });
    expect(((await as('plain', { method: 'GET', url: '/v1/workflows?idPrefix=from' })).json() as { ids: string[] }).ids).toEqual([id]);
    expect((await as('red', { method: 'GET', url: `/v1/workflows/${id}` })).statusCode).toBe(404);
    expect(((await as('red', { method: 'GET', url: '/v1/workflows?idPrefix=from' })).json() as { ids: string[] }).ids).toEqual([]);
  });
});

describe('an agent registered for one tenant', () => {
  it('is listed, found and picked for a skill in that tenant only; the public card leaves it out', async () => {
    const secret = await startDemoAgent({ name: 'Blue agent', skills: [{ id: 'blue-only', name: 'blue-only', description: 'blue work', tags: ['test'] }], behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked ${answer}`)) });
    try {
      const registered = await as('ops', { method: 'POST', url: '/v1/agents', payload: { cardUrl: secret.cardUrl, tenant: 'blue' } });
      expect(registered.json()).toMatchObject({ tenant: 'blue' });
      const id = (registered.json() as { id: string }).id;
      const listed = async (token: keyof typeof TOKENS) => ((await as(token, { method: 'GET', url: '/v1/agents' })).json() as { agents: { id: string }[] }).agents.map((agent) => agent.id);
      expect(await listed('blue')).toContain(id);
      expect(await listed('ops')).toContain(id);
      expect(await listed('red')).not.toContain(id);
      expect((await as('red', { method: 'GET', url: `/v1/agents/${id}` })).statusCode).toBe(404);
      expect((await as('red', { method: 'GET', url: '/ui/agents' })).body).not.toContain('Blue agent');
      // Picked for the skill in blue's workflow; red's finds no agent with that skill (its step waits, unsent).
      const bySkill = (workflowId: string) => ({ workflowId, steps: [{ name: 'main', skill: 'blue-only', message: { text: 'x' } }] });
      expect((await as('blue', { method: 'POST', url: '/v1/workflows', payload: bySkill('by-skill') })).statusCode).toBe(201);
      expect((await as('red', { method: 'POST', url: '/v1/workflows', payload: bySkill('by-skill') })).statusCode).toBe(201);
      const attempts = async (token: keyof typeof TOKENS) => ((await as(token, { method: 'GET', url: '/v1/workflows/by-skill' })).json() as { steps: { attempts: { agentCardUrl?: string }[] }[] }).steps[0]!.attempts;
      expect((await attempts('blue')).map((attempt) => attempt.agentCardUrl)).toEqual([registered.json().cardUrl]);
      expect(await attempts('red')).toEqual([]);
      const card = await (await fetch(`${baseUrl}/.well-known/agent-card.json`)).text();
      expect(card).toContain('"trip"');
      expect(card).not.toContain('blue-only');
      // A refresh keeps who sees it; `tenant: null` shares it with every tenant.
      expect((await as('ops', { method: 'POST', url: '/v1/agents', payload: { cardUrl: secret.cardUrl } })).json()).toMatchObject({ tenant: 'blue' });
      expect(await listed('red')).not.toContain(id);
      expect((await as('ops', { method: 'POST', url: '/v1/agents', payload: { cardUrl: secret.cardUrl, tenant: null } })).json()).toMatchObject({ tenant: null });
      expect(await listed('red')).toContain(id);
    } finally {
      await secret.close();
    }
  });
});

describe('the producer library', () => {
  it('a producer with a tenant records it: its workflows, its send jobs (for fairness between tenants), its reads', async () => {
    const producer = createProducer({ redis: redisServer().url, prefix: PREFIX, tenant: 'lib', addressPolicy: { allowLoopback: true } });
    try {
      const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'from a service', idempotencyKey: 'lib-1' });
      expect(id).toBe('lib~lib-1');
      expect((await producer.get('lib-1')).tenant).toBe('lib');
      await expect(producer.get(victims.blue)).rejects.toThrow(NotFoundError);
      const queue = new Queue('send', { connection: redis(), prefix: queuePrefix(PREFIX) });
      const jobs = await queue.getJobs(['waiting', 'delayed', 'prioritized']);
      expect(jobs.find((job) => job.data.workflowId === id)?.data).toMatchObject({ workflowId: id, tenant: 'lib' });
      await queue.close();
      // The same producer acting for another scope shares its connections.
      expect((await producer.forScope({ tenant: 'blue', role: 'viewer' }).get('trip')).workflowId).toBe(victims.blue);
    } finally {
      await producer.close();
    }
  });
});

describe('listings of a small tenant', () => {
  it('read its own index: its workflows come on the first page however many other tenants’ are newer', async () => {
    const journal = new Journal(redis(), { prefix: PREFIX });
    const newer = 2_100; // more than one call's candidates (SEARCH_CANDIDATE_LIMIT)
    const at = String(Date.now() + 60_000);
    for (let index = 0; index < newer; index++) await journal.createWorkflow(`crowd-${index}`, { state: 'RUNNING', definition: JSON.stringify(workflowOf(`crowd-${index}`)), createdAt: at, updatedAt: at });
    const page = (await as('red', { method: 'GET', url: '/v1/workflows?limit=5' })).json() as { ids: string[] };
    expect(page.ids.length).toBeGreaterThan(0);
    expect(page.ids.every((id) => id.startsWith('red~'))).toBe(true);
    const operator = (await as('ops', { method: 'GET', url: '/v1/workflows?limit=5&tenant=red' })).json() as { ids: string[] };
    expect(operator.ids).toEqual(page.ids);
  });
});

describe('metrics', () => {
  it('count creations by tenant (configured tenants only)', async () => {
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(/durable_a2a_tenant_workflows_created_total\{tenant="blue"\} [1-9]/);
    expect(text).toMatch(/durable_a2a_tenant_quota_refusals_total\{tenant="red"\} 0/);
  });
});
