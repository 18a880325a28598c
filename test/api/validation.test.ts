/**
 * Validation at the edge (docs/http-api.md "Validation at the edge"; field cases RT1, RT8, RT9): unknown
 * fields are refused naming the field, workflow definitions are checked fully
 * before anything is written, the address policy answers the same on every
 * route that takes an agent URL, client mistakes are 4xx with a code that
 * says what to fix, and no input produces a 5xx (property over random bodies
 * and paths).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ApiServer } from '@durable-a2a/producer/server';
import { useRedisServer } from '../harness/redis.ts';
import { authorized, startTestServer } from '../harness/api-server.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import type { Fleet } from '@durable-a2a/workers';

const redisServer = useRedisServer();
let open: ApiServer; // loopback agents allowed (as the test agents need)
let strict: ApiServer; // the default policy: public addresses only
let agent: DemoAgentHandle;
let fleet: Fleet;

beforeAll(async () => {
  agent = await startDemoAgent({ behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked ${answer}`)) });
  open = startTestServer({ redisUrl: redisServer().url, prefix: 'validation' });
  strict = startTestServer({ redisUrl: redisServer().url, prefix: 'validation', addressPolicy: {} });
  await Promise.all([open.ready(), strict.ready()]);
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: 'validation' });
});
afterAll(async () => {
  await fleet?.close();
  await open?.close();
  await strict?.close();
  await agent?.close();
});

const post = (app: ApiServer, url: string, payload: unknown) => authorized(app, { method: 'POST', url, payload: payload as object });
/** A step for definitions refused before any agent matters. */
const step = (name: string, extra: object = {}) => ({ name, agent: 'http://agent.invalid/', message: { text: 'hi' }, ...extra });
/** A step to the test agent. */
const liveStep = (name: string) => ({ name, agent: agent.cardUrl, message: { text: 'hi' } });

describe('unknown fields are refused, naming the field', () => {
  it.each([
    ['/v1/delegations', () => ({ agent: agent.cardUrl, text: 'hi', idempotency_key: 'k1' }), 'idempotency_key'],
    ['/v1/workflows', () => ({ workflowId: 'typo-1', steps: [step('a', { retries: 3 })] }), 'steps.0.retries'],
    ['/v1/workflows', () => ({ workflowId: 'typo-2', steps: [step('a', { message: { text: 'hi', txt: 'x' } })] }), 'steps.0.message.txt'],
    ['/v1/workflows', () => ({ workflowId: 'typo-3', steps: [step('a', { compensation: { handler: 'h', parms: {} } })] }), 'steps.0.compensation.parms'],
    ['/v1/workflows', () => ({ workflowId: 'typo-4', steps: [step('a')], maxAttempts: 2 }), 'maxAttempts'],
    ['/v1/agents', () => ({ cardUrl: agent.cardUrl, force: true }), 'force'],
  ])('POST %s → 400 naming %s', async (url, body, field) => {
    const response = await post(open, url, body());
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'INVALID_INPUT', field });
  });
});

describe('RT1: workflow definitions are checked fully before anything is written', () => {
  it.each([
    ['a step named like a compensation', [step('flight'), step('undo.flight'), step('last')], 'steps.1.name'],
    ['a reserved prefix without a dot', [step('flight'), step('undo-flight')], 'steps.1.name'],
    ['a "|" in a name', [step('a|b')], 'steps.0.name'],
    ['a ":" in a name', [step('a:b')], 'steps.0.name'],
    ['a duplicate name', [step('a'), step('a')], 'steps.1.name'],
    ['after naming an unknown step', [step('a'), step('b', { after: ['nope'] })], 'steps.1.after.0'],
    ['after naming a later step (a cycle)', [step('a', { after: ['b'] }), step('b', { after: ['a'] })], 'steps.0.after.0'],
    ['after naming the step itself', [step('a', { after: ['a'] })], 'steps.0.after.0'],
    ['after naming a step twice', [step('a'), step('b', { after: ['a', 'a'] })], 'steps.1.after.1'],
    ['more than 100 steps', Array.from({ length: 101 }, (_, index) => step(`s${index}`)), 'steps'],
    ['a step with both skill and agent', [step('a', { skill: 'book-flight' })], 'steps.0.skill'],
    ['a compensation with both skill and agent', [step('a', { compensation: { agent: 'http://agent.invalid/', skill: 'x', message: { text: 'undo' } } })], 'steps.0.compensation.skill'],
  ])('%s → 400, nothing written', async (name, steps, field) => {
    const workflowId = `rt1-${name.replace(/[^a-z0-9]+/gi, '-')}`.slice(0, 100);
    const response = await post(open, '/v1/workflows', { workflowId, steps });
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json()).toMatchObject({ code: 'INVALID_INPUT', field });
    expect((await authorized(open, { method: 'GET', url: `/v1/workflows/${workflowId}` })).statusCode).toBe(404);
  });
});

describe('a verifier the workers do not have', () => {
  it('the step is refused before anything is sent (no SendMessage), journaled FAILED VERIFIER_UNKNOWN, the workflow FAILED with the reason', async () => {
    const response = await post(open, '/v1/workflows', { workflowId: 'verifier-nosuch', steps: [{ ...liveStep('a'), verifier: { name: 'nosuch' } }] });
    expect(response.statusCode, response.body).toBe(201);
    const view = await eventually(async () => {
      const current = (await authorized(open, { method: 'GET', url: '/v1/workflows/verifier-nosuch' })).json<{ state: string; steps: { attempts: { state: string; messageId: string; lastError?: { code: string }; effect?: string }[] }[] }>();
      return ['FAILED', 'NEEDS_ATTENTION', 'COMPLETED'].includes(current.state) && current;
    }, 'the workflow settled');
    expect(view.state).toBe('FAILED');
    expect(view.steps[0]!.attempts).toEqual([expect.objectContaining({ state: 'FAILED', lastError: expect.objectContaining({ code: 'VERIFIER_UNKNOWN' }), effect: 'absent' })]);
    expect(agent.sendMessageCount(view.steps[0]!.attempts[0]!.messageId)).toBe(0);
  });
});

describe('the address policy answers the same on every route, at request time', () => {
  // RT9 forms among them: IPv4-compatible, IPv4-mapped with a zero prefix, NAT64 local-use.
  const refused = ['http://127.0.0.1:1/', 'http://10.0.0.1/', 'http://169.254.169.254/', 'http://[::1]/', 'http://[::127.0.0.1]/', 'http://[::ffff:0:127.0.0.1]/', 'http://[64:ff9b:1::a00:1]/'];
  it.each(refused)('%s → 422 AGENT_ADDRESS_REFUSED on /v1/delegations, /v1/workflows and /v1/agents', async (url) => {
    const answers = await Promise.all([
      post(strict, '/v1/delegations', { agent: url, text: 'hi', idempotencyKey: 'policy-d' }),
      post(strict, '/v1/workflows', { workflowId: 'policy-w', steps: [{ name: 'a', agent: url, message: { text: 'hi' } }] }),
      post(strict, '/v1/agents', { cardUrl: url }),
    ]);
    for (const answer of answers) {
      expect(answer.statusCode, answer.body).toBe(422);
      expect(answer.json().code).toBe('AGENT_ADDRESS_REFUSED');
    }
    expect(answers[0]!.json().field).toBe('agent');
    for (const answer of answers) {
      const detail = answer.json().detail as string;
      expect(detail.match(/\((private|loopback|link-local|metadata|[a-z-]+)\)/g), detail).toHaveLength(1); // the category once
      expect(detail).not.toMatch(/(\S+) -> \1 /); // no "10.0.0.1 -> 10.0.0.1"
    }
    expect(answers[1]!.json().field).toBe('steps.0.agent');
    expect((await authorized(strict, { method: 'GET', url: '/v1/workflows/policy-w' })).statusCode).toBe(404);
  });

  it('a refused address says what allows it: the switch of its category and its variable (DA2A_ALLOW_PRIVATE for 10.0.0.5)', async () => {
    const cases = [
      { url: 'http://10.0.0.5/', says: ['addressPolicy.allowPrivate', 'DA2A_ALLOW_PRIVATE=true', 'DA2A_ALLOWED_AGENT_HOSTS=<host>'] },
      { url: 'http://127.0.0.1:1/', says: ['addressPolicy.allowLoopback', 'DA2A_ALLOW_LOOPBACK=true'] },
      { url: 'http://169.254.1.1/', says: ['addressPolicy.allowLinkLocal', 'DA2A_ALLOWED_AGENT_HOSTS=<host>'] },
    ];
    for (const { url, says } of cases) {
      const detail = (await post(strict, '/v1/delegations', { agent: url, text: 'hi', idempotencyKey: 'policy-hint' })).json().detail as string;
      for (const words of says) expect(detail, url).toContain(words);
    }
    const metadata = (await post(strict, '/v1/agents', { cardUrl: 'http://169.254.169.254/' })).json().detail as string;
    expect(metadata).not.toMatch(/DA2A_|addressPolicy/); // no switch allows a metadata address
  });

  it('a compensation agent is checked too', async () => {
    const response = await post(strict, '/v1/workflows', {
      workflowId: 'policy-c',
      steps: [{ name: 'a', skill: 'x', message: { text: 'hi' }, compensation: { agent: 'http://10.1.2.3/', message: { text: 'undo' } } }],
    });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({ code: 'AGENT_ADDRESS_REFUSED', field: 'steps.0.compensation.agent' });
  });
});

describe('RT8: client mistakes are 4xx with a code that says what to fix', () => {
  it('a card that cannot be fetched → 502 AGENT_CARD_UNREACHABLE', async () => {
    const response = await post(open, '/v1/agents', { cardUrl: 'http://127.0.0.1:1' });
    expect(response.statusCode, response.body).toBe(502);
    expect(response.json()).toMatchObject({ code: 'AGENT_CARD_UNREACHABLE', field: 'cardUrl' });
  });

  it.each(['99999999999999999999999', '18446744073709551616', '-1', 'abc'])('cursor %s → 400', async (cursor) => {
    const response = await authorized(open, { method: 'GET', url: `/v1/workflows?cursor=${cursor}` });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'INVALID_INPUT', field: 'cursor' });
  });

  it.each([
    ['/v1/workflows', { workflowId: 'plain-w', steps: [{ name: 'a', agent: 'http://agent.invalid/', message: { text: 'hi' } }] }],
    ['/v1/delegations', { agent: 'http://agent.invalid/', text: 'hi', idempotencyKey: 'plain-d' }],
    ['/v1/agents', { cardUrl: 'http://agent.invalid/' }],
    ['/v1/workflows/plain-w/steps/a/reply', { text: 'Paris' }],
    ['/v1/workflows/plain-w/resolve', { action: 'retry' }],
  ])('a text/plain body on POST %s → 415 UNSUPPORTED_MEDIA_TYPE, nothing written', async (url, body) => {
    const response = await authorized(open, { method: 'POST', url, payload: JSON.stringify(body), headers: { 'content-type': 'text/plain' } });
    expect(response.statusCode, response.body).toBe(415);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', status: 415 });
    expect((await authorized(open, { method: 'GET', url: '/v1/workflows/plain-w' })).statusCode).toBe(404);
  });

  it('a reply to a step that does not exist → 404; the same reply again → 200, a different one → 409 NO_OPEN_QUESTION', async () => {
    expect((await post(open, '/v1/workflows', { workflowId: 'rt8-reply', steps: [liveStep('ask')] })).statusCode).toBe(201);
    await eventually(async () => (await authorized(open, { method: 'GET', url: '/v1/workflows/rt8-reply' })).json().openQuestions?.length === 1, 'question open');
    const response = await post(open, '/v1/workflows/rt8-reply/steps/nope/reply', { text: 'Paris' });
    expect(response.statusCode).toBe(404);
    expect(response.json().code).toBe('NOT_FOUND');
    const first = await post(open, '/v1/workflows/rt8-reply/steps/ask/reply', { text: 'Paris' });
    expect(first.statusCode).toBe(202);
    // The same reply again is harmless (200, the earlier messageId); a different one is refused: the question is answered.
    const again = await post(open, '/v1/workflows/rt8-reply/steps/ask/reply', { text: 'Paris' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ messageId: first.json().messageId, created: false });
    const different = await post(open, '/v1/workflows/rt8-reply/steps/ask/reply', { text: 'Lisbon' });
    expect(different.statusCode, different.body).toBe(409);
    expect(different.json()).toMatchObject({ code: 'NO_OPEN_QUESTION' });
    const differentParts = await post(open, '/v1/workflows/rt8-reply/steps/ask/reply', { parts: [{ text: 'Paris' }, { text: '!' }] });
    expect(differentParts.statusCode).toBe(409);
  });
});

describe('no input produces a 5xx', () => {
  const ROUTES = [
    ['POST', '/v1/delegations'],
    ['POST', '/v1/workflows'],
    ['POST', '/v1/agents'],
    ['POST', '/v1/workflows/rt8-reply/steps/ask/reply'],
    ['POST', '/v1/workflows/rt8-reply/resolve'],
    ['POST', '/v1/workflows/nope/cancel'],
    ['GET', '/v1/workflows'],
    ['GET', '/v1/agents'],
    ['GET', '/v1/agents/nope'],
    ['POST', '/v1/agents/0123456789abcdef/disable'],
    ['POST', `/v1/agents/${encodeURIComponent('http://127.0.0.1:9/')}/enable`],
    ['DELETE', '/v1/agents/0123456789abcdef'],
  ] as const;
  const segment = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('..', '%00', '%ZZ', 'x'.repeat(300), '99999999999999999999999', '-1'));

  it('random bodies on every route', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), fc.anything({ maxDepth: 3 }), async ([method, url], body) => {
        const response = await authorized(strict, { method, url, ...(method === 'POST' ? { payload: JSON.stringify(body) ?? 'null', headers: { 'content-type': 'application/json' } } : {}) });
        expect(response.statusCode, `${method} ${url} ${JSON.stringify(body)?.slice(0, 200)} → ${response.body.slice(0, 300)}`).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
  });

  it('random paths and query strings', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('GET', 'POST'), fc.array(segment, { minLength: 1, maxLength: 5 }), fc.dictionary(fc.constantFrom('cursor', 'limit', 'state', 'x'), segment), async (method, segments, query) => {
        const url = `/v1/${segments.map(encodeURIComponent).join('/')}?${new URLSearchParams(query).toString()}`;
        const response = await authorized(strict, { method, url, ...(method === 'POST' ? { payload: {} } : {}) });
        expect(response.statusCode, `${method} ${url} → ${response.body.slice(0, 300)}`).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
  });
});
