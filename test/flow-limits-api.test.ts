/**
 * Flow control settable over HTTP, the CLI and /ui (docs/flow-control.md "Setting limits and weights"): an agent's
 * fleet-wide limits (`PUT` / `DELETE /v1/agents/:id/limits`, read back in the agent's view) and tenants' weights
 * (`/v1/tenants/...`), the `durable-a2a agents limits` and `tenants weight` commands against a listening API, the
 * agents page's limits form through HTTP without a browser, and a worker honouring a limit set through the route
 * (counted by the agent).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { EXIT_CODES, run } from '@durable-a2a/cli';
import { agentIdOf } from '@durable-a2a/shared';
import { useRedisServer } from './harness/redis.ts';
import { eventually, startTestFleet } from './harness/fleet.ts';
import { TEST_API_TOKEN, authorized, signIn, startTestServer } from './harness/api-server.ts';
import { startTaskAgent, type TaskAgentHandle } from './harness/task-agent.ts';

const redisServer = useRedisServer();
const PREFIX = 'flowapi';
const UNKNOWN_AGENT = '0123456789abcdef';
let app: ApiServer;
let apiUrl: string;
let fleet: Fleet;
/** Its limits are set and cleared by the HTTP, CLI and /ui cases. */
let agent: TaskAgentHandle;
/** Only the worker case delegates to it: its counts are that case's alone. */
let limited: TaskAgentHandle;

beforeAll(async () => {
  agent = await startTaskAgent({ taskMs: 20 });
  limited = await startTaskAgent({ taskMs: 20, sendMs: 400 });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
  apiUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX, concurrency: { send: 4 } });
  for (const each of [agent, limited]) expect((await authorized(app, { method: 'POST', url: '/v1/agents', payload: { cardUrl: each.cardUrl } })).statusCode).toBe(201);
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await Promise.all([agent?.close(), limited?.close()]);
});

const call = (method: 'GET' | 'PUT' | 'DELETE', url: string, payload?: unknown) => authorized(app, { method, url, ...(payload !== undefined ? { payload: payload as object } : {}) });

/** Runs the CLI in-process with the API's URL and token in its environment. */
async function cli(argv: string[], env: Record<string, string | undefined> = { DURABLE_A2A_URL: apiUrl, DURABLE_A2A_TOKEN: TEST_API_TOKEN }) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env });
  return { code, stdout, stderr };
}

describe("an agent's limits over HTTP", () => {
  it('PUT sets them (by id or card URL), GET /v1/agents and /v1/agents/:id read them back, DELETE clears them', async () => {
    const id = agentIdOf(agent.cardUrl);
    const set = await call('PUT', `/v1/agents/${id}/limits`, { maxInFlight: 2, rate: { sendsPerSecond: 5 } });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toMatchObject({ id, limits: { maxInFlight: 2, rate: { sendsPerSecond: 5 } } });
    expect((await call('GET', `/v1/agents/${id}`)).json().limits).toEqual({ maxInFlight: 2, rate: { sendsPerSecond: 5 } });
    // A second PUT replaces the limits (the rate goes), by card URL this time.
    const replaced = await call('PUT', `/v1/agents/${encodeURIComponent(agent.cardUrl)}/limits`, { rate: { resubscribesPerSecond: 0.5 } });
    expect(replaced.json().limits).toEqual({ rate: { resubscribesPerSecond: 0.5 } });
    const listed = (await call('GET', '/v1/agents')).json<{ agents: { id: string; limits: unknown }[] }>().agents.find((each) => each.id === id);
    expect(listed?.limits).toEqual({ rate: { resubscribesPerSecond: 0.5 } });
    const cleared = await call('DELETE', `/v1/agents/${id}/limits`);
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json().limits).toBeNull();
    expect((await call('GET', `/v1/agents/${id}`)).json().limits).toBeNull();
  });

  it('a bad body is a 400 naming the field, and nothing is written', async () => {
    const id = agentIdOf(agent.cardUrl);
    await call('PUT', `/v1/agents/${id}/limits`, { maxInFlight: 3 });
    for (const [body, field] of [
      [{}, 'maxInFlight'],
      [{ rate: {} }, 'maxInFlight'],
      [{ maxInFlight: 0 }, 'maxInFlight'],
      [{ maxInFlight: 1.5 }, 'maxInFlight'],
      [{ maxInFlight: '2' }, 'maxInFlight'],
      [{ rate: { sendsPerSecond: -1 } }, 'rate.sendsPerSecond'],
      [{ maxInFlight: 1, extra: true }, undefined],
    ] as const) {
      const refused = await call('PUT', `/v1/agents/${id}/limits`, body);
      expect(refused.statusCode, JSON.stringify(body)).toBe(400);
      expect(refused.json()).toMatchObject({ code: 'INVALID_INPUT', ...(field ? { field } : {}) });
    }
    expect((await call('GET', `/v1/agents/${id}`)).json().limits).toEqual({ maxInFlight: 3 });
    await call('DELETE', `/v1/agents/${id}/limits`);
  });

  it('an unknown agent is a 404 for PUT and DELETE; no token is a 401', async () => {
    expect((await call('PUT', `/v1/agents/${UNKNOWN_AGENT}/limits`, { maxInFlight: 1 })).json()).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect((await call('DELETE', `/v1/agents/${UNKNOWN_AGENT}/limits`)).statusCode).toBe(404);
    const anonymous = await app.inject({ method: 'PUT', url: `/v1/agents/${agentIdOf(agent.cardUrl)}/limits`, payload: { maxInFlight: 1 } });
    expect(anonymous.statusCode).toBe(401);
    expect((await call('GET', `/v1/agents/${agentIdOf(agent.cardUrl)}`)).json().limits).toBeNull();
  });
});

describe("tenants' weights over HTTP", () => {
  it('unset tenants weigh 1; PUT sets a weight, GET reads it and the list holds it; DELETE clears it back to 1', async () => {
    expect((await call('GET', '/v1/tenants/weights')).json()).toEqual({ weights: {}, defaultWeight: 1 });
    expect((await call('GET', '/v1/tenants/acme/weight')).json()).toEqual({ tenant: 'acme', weight: 1, set: false });
    const set = await call('PUT', '/v1/tenants/acme/weight', { weight: 3 });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toEqual({ tenant: 'acme', weight: 3, set: true });
    expect((await call('GET', '/v1/tenants/acme/weight')).json()).toEqual({ tenant: 'acme', weight: 3, set: true });
    expect((await call('GET', '/v1/tenants/weights')).json()).toEqual({ weights: { acme: 3 }, defaultWeight: 1 });
    expect((await call('DELETE', '/v1/tenants/acme/weight')).json()).toEqual({ tenant: 'acme', weight: 1, set: false });
    expect((await call('GET', '/v1/tenants/weights')).json().weights).toEqual({});
  });

  it('property: a weight is accepted exactly when it is a whole number 1 to 100; a refused one writes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.integer({ min: -5, max: 120 }), fc.double({ min: -5, max: 120, noNaN: true }), fc.constantFrom<unknown>('3', null, true)), async (weight) => {
        const answer = await call('PUT', '/v1/tenants/prop/weight', { weight });
        const valid = typeof weight === 'number' && Number.isInteger(weight) && weight >= 1 && weight <= 100;
        expect(answer.statusCode, String(weight)).toBe(valid ? 200 : 400);
        if (!valid) expect(answer.json()).toMatchObject({ code: 'INVALID_INPUT', field: 'weight' });
        const stored = (await call('GET', '/v1/tenants/prop/weight')).json<{ weight: number; set: boolean }>();
        if (valid) expect(stored).toEqual({ tenant: 'prop', weight, set: true });
        await call('DELETE', '/v1/tenants/prop/weight');
      }),
      { numRuns: 40 },
    );
    expect((await call('GET', '/v1/tenants/prop/weight')).json().set).toBe(false);
  });

  it('a tenant name longer than 64 characters or an unknown body field is a 400', async () => {
    expect((await call('PUT', `/v1/tenants/${'t'.repeat(65)}/weight`, { weight: 2 })).statusCode).toBe(400);
    expect((await call('PUT', '/v1/tenants/acme/weight', { weight: 2, extra: 1 })).statusCode).toBe(400);
    expect((await call('GET', '/v1/tenants/weights')).json().weights).toEqual({});
  });
});

describe('durable-a2a agents limits and tenants weight, against the listening API', () => {
  it('sets, shows (human and --json) and clears an agent\'s limits; bad usage is 2, an unknown agent 3, no token 5', async () => {
    const id = agentIdOf(agent.cardUrl);
    const set = await cli(['agents', 'limits', id, '--max-in-flight', '3', '--sends-per-second', '5']);
    expect(set).toMatchObject({ code: EXIT_CODES.OK, stderr: '' });
    expect(set.stdout).toContain(`${id}\tactive\t`);
    expect(set.stdout).toContain('\tlimits maxInFlight 3, 5 sends/s');
    expect((await call('GET', `/v1/agents/${id}`)).json().limits).toEqual({ maxInFlight: 3, rate: { sendsPerSecond: 5 } });
    expect((await cli(['agents', 'limits', agent.cardUrl])).stdout).toBe(`${id}\tlimits maxInFlight 3, 5 sends/s\n`);
    expect(JSON.parse((await cli(['--json', 'agents', 'limits', id])).stdout).limits).toEqual({ maxInFlight: 3, rate: { sendsPerSecond: 5 } });

    expect((await cli(['agents', 'limits', id, '--clear', '--max-in-flight', '1'])).code).toBe(EXIT_CODES.USAGE);
    expect((await cli(['agents', 'limits', id, '--max-in-flight', '0'])).code).toBe(EXIT_CODES.USAGE);
    expect((await cli(['agents', 'limits', id, '--sends-per-second', 'fast'])).code).toBe(EXIT_CODES.USAGE);
    expect((await call('GET', `/v1/agents/${id}`)).json().limits).toEqual({ maxInFlight: 3, rate: { sendsPerSecond: 5 } });
    const unknown = await cli(['agents', 'limits', UNKNOWN_AGENT, '--max-in-flight', '1']);
    expect(unknown.code).toBe(EXIT_CODES.NOT_FOUND);
    expect(unknown.stderr).toContain('NOT_FOUND');
    expect((await cli(['agents', 'limits', id, '--clear'], { DURABLE_A2A_URL: apiUrl })).code).toBe(EXIT_CODES.UNAUTHORIZED);

    const cleared = await cli(['agents', 'limits', id, '--clear']);
    expect(cleared.code).toBe(EXIT_CODES.OK);
    expect(cleared.stdout).not.toContain('limits');
    expect((await cli(['agents', 'limits', id])).stdout).toBe(`${id}\tno limits\n`);
  });

  it('tenants weight sets, shows and clears; tenants lists; a weight outside 1 to 100 is bad usage', async () => {
    expect(await cli(['tenants', 'weight', 'acme', '4'])).toEqual({ code: EXIT_CODES.OK, stdout: 'acme\t4\n', stderr: '' });
    expect((await cli(['tenants', 'weight', 'acme'])).stdout).toBe('acme\t4\n');
    expect((await cli(['tenants'])).stdout).toBe('acme\t4\n');
    expect(JSON.parse((await cli(['--json', 'tenants', 'list'])).stdout)).toEqual({ weights: { acme: 4 }, defaultWeight: 1 });
    for (const bad of ['0', '101', '2.5', 'heavy']) expect((await cli(['tenants', 'weight', 'acme', bad])).code, bad).toBe(EXIT_CODES.USAGE);
    expect((await cli(['tenants', 'weight', 'acme', '3', '--clear'])).code).toBe(EXIT_CODES.USAGE);
    expect((await cli(['tenants', 'weight', 'acme'])).stdout).toBe('acme\t4\n');
    expect((await cli(['tenants', 'weight', 'acme', '--clear'])).stdout).toBe('acme\t1\t(default)\n');
    expect((await cli(['tenants'])).stdout).toBe('(none set: every tenant weighs 1)\n');
  });

  it('--help of both commands names their options', async () => {
    expect((await cli(['agents', 'limits', '--help'])).stdout).toMatch(/--max-in-flight <n>[\s\S]*--sends-per-second <rate>[\s\S]*--resubscribes-per-second <rate>[\s\S]*--clear/);
    expect((await cli(['tenants', 'weight', '--help'])).stdout).toContain('--clear');
  });
});

describe('/ui agents page: the limits form, through HTTP without a browser', () => {
  const form = (fields: Record<string, string>, headers: Record<string, string>) => ({
    payload: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', ...headers },
  });

  it('shows each agent\'s limits and the form; a post sets them (visible confirmation), a Clear post clears them; a refused value is shown', async () => {
    const id = agentIdOf(agent.cardUrl);
    const cookie = await signIn(app);
    const before = await app.inject({ method: 'GET', url: '/ui/agents', headers: { cookie } });
    expect(before.statusCode).toBe(200);
    expect(before.body).toContain('<form class="limits" method="post" action="/ui/agents/limits"');
    expect(before.body).toContain(`<option value="${id}">`);
    expect(before.body).toContain('<span class="limits">none</span>');

    const set = await app.inject({ method: 'POST', url: '/ui/agents/limits', ...form({ agent: id, maxInFlight: '2', sendsPerSecond: '', resubscribesPerSecond: '1.5' }, { cookie }) });
    expect(set.statusCode).toBe(303);
    expect(set.headers.location).toBe('/ui/agents?done=limits');
    expect((await call('GET', `/v1/agents/${id}`)).json().limits).toEqual({ maxInFlight: 2, rate: { resubscribesPerSecond: 1.5 } });
    const after = await app.inject({ method: 'GET', url: '/ui/agents?done=limits', headers: { cookie } });
    expect(after.body).toContain('at most 2 in flight, 1.5 resubscribes/s');
    expect(after.body).toMatch(/<p id="notice" class="notice" role="status" aria-live="polite">Limits saved\./);

    const refused = await app.inject({ method: 'POST', url: '/ui/agents/limits', ...form({ agent: id, maxInFlight: '0' }, { cookie, accept: 'text/html' }) });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('notice-refused');
    expect(refused.body).toContain('Refused:');
    const unknown = await app.inject({ method: 'POST', url: '/ui/agents/limits', ...form({ agent: UNKNOWN_AGENT, maxInFlight: '1' }, { cookie, 'x-da2a-ui': 'fetch' }) });
    expect(unknown.statusCode).toBe(404);
    expect((await call('GET', `/v1/agents/${id}`)).json().limits).toEqual({ maxInFlight: 2, rate: { resubscribesPerSecond: 1.5 } });

    // The script's post gets the API's answer (the agent's view).
    const scripted = await app.inject({ method: 'POST', url: '/ui/agents/limits', ...form({ agent: id, sendsPerSecond: '4' }, { cookie, 'x-da2a-ui': 'fetch' }) });
    expect(scripted.statusCode).toBe(200);
    expect(scripted.json().limits).toEqual({ rate: { sendsPerSecond: 4 } });

    const clear = await app.inject({ method: 'POST', url: '/ui/agents/limits', ...form({ agent: id, clear: '1' }, { cookie }) });
    expect(clear.headers.location).toBe('/ui/agents?done=limits-cleared');
    expect((await call('GET', `/v1/agents/${id}`)).json().limits).toBeNull();
  });

  it('a post from another site is refused (403) and writes nothing', async () => {
    const id = agentIdOf(agent.cardUrl);
    const cookie = await signIn(app);
    const crossSite = await app.inject({ method: 'POST', url: '/ui/agents/limits', ...form({ agent: id, maxInFlight: '1' }, { cookie, 'sec-fetch-site': 'cross-site' }) });
    expect(crossSite.statusCode).toBe(403);
    expect((await call('GET', `/v1/agents/${id}`)).json().limits).toBeNull();
  });
});

describe('a worker honours a limit set through the route', () => {
  it('maxInFlight 1 set with PUT /v1/agents/:id/limits (send concurrency 4, SendMessage takes 400 ms): 3 delegations, the agent never handles 2 SendMessage at once', async () => {
    const id = agentIdOf(limited.cardUrl);
    expect((await call('PUT', `/v1/agents/${id}/limits`, { maxInFlight: 1 })).statusCode).toBe(200);
    await fleet.refreshAgentLabels(); // as every agentLabelRefreshMs
    const ids: string[] = [];
    for (let index = 0; index < 3; index++) {
      const created = await authorized(app, { method: 'POST', url: '/v1/delegations', payload: { agent: limited.cardUrl, text: `limited ${index}`, idempotencyKey: `limited-${index}` } });
      ids.push(created.json<{ id: string }>().id);
    }
    await eventually(
      async () => (await Promise.all(ids.map((workflowId) => call('GET', `/v1/workflows/${workflowId}`)))).every((view) => view.json<{ state: string }>().state === 'COMPLETED'),
      'the 3 delegations COMPLETED',
      90_000,
      200,
    );
    expect(limited.count('SendMessage')).toBe(3);
    expect(limited.maxConcurrentSends()).toBe(1);
  }, 120_000);
});
