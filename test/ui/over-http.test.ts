/**
 * The page for people (docs/people.md), over HTTP without a browser: GET /v1/questions and the workflow
 * summaries (state, waiting, newest first, paged), and /ui's sign-in form,
 * session cookie, CSRF refusal, blank answers, ETag and escaping.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completesWith, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { TEST_API_TOKEN, authorized, signIn, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const PREFIX = 'uiapi';
const QUESTION = 'Which city? <img src=x onerror="alert(1)">';
let app: ApiServer;
let fleet: Fleet;
let done: DemoAgentHandle;
let asking: DemoAgentHandle;

interface Summary {
  workflowId: string;
  state: string;
  updatedAt: string;
  openQuestions: number;
  waitingFor?: string;
}

beforeAll(async () => {
  done = await startDemoAgent({ behaviour: completesWith('done') });
  asking = await startDemoAgent({ behaviour: asksForInput(QUESTION, (answer) => completionSteps(`booked ${answer}`)) });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
  await app.ready();
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
  for (const [id, agent] of [['done-1', done], ['ask-1', asking], ['done-2', done], ['ask-2', asking]] as const) {
    await authorized(app, { method: 'POST', url: '/v1/delegations', payload: { agent: agent.cardUrl, text: 'go', idempotencyKey: id } });
  }
  await eventually(async () => (await authorized(app, { method: 'GET', url: '/v1/questions' })).json<{ questions: unknown[] }>().questions.length === 2, 'two open questions');
  await eventually(async () => {
    const page = (await authorized(app, { method: 'GET', url: '/v1/workflows?state=COMPLETED' })).json<{ ids: string[] }>();
    return page.ids.length === 2;
  }, 'two completed workflows');
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await done?.close();
  await asking?.close();
});

const get = <T>(url: string) => authorized(app, { method: 'GET', url }).then((response) => ({ status: response.statusCode, body: response.json<T>() }));

describe('GET /v1/questions', () => {
  it('lists the open questions across workflows with the agent text, paged newest first', async () => {
    const first = await get<{ questions: { workflowId: string; step: string; text: string; state: string; taskId?: string }[]; cursor?: string }>('/v1/questions?limit=1');
    expect(first.status).toBe(200);
    expect(first.body.questions).toHaveLength(1);
    expect(first.body.cursor).toBeDefined();
    const second = await get<typeof first.body>(`/v1/questions?limit=1&cursor=${first.body.cursor}`);
    expect(second.body.cursor).toBeUndefined();
    const all = [...first.body.questions, ...second.body.questions];
    expect(all.map((question) => question.workflowId).sort()).toEqual(['ask-1', 'ask-2']);
    for (const question of all) expect(question).toMatchObject({ step: 'main', state: 'INPUT_REQUIRED', text: QUESTION, taskId: expect.any(String) });
  });

  it('an answered question leaves the list', async () => {
    const reply = await authorized(app, { method: 'POST', url: '/v1/workflows/ask-2/steps/main/reply', payload: { text: 'Paris' } });
    expect(reply.statusCode).toBe(202);
    const page = await get<{ questions: { workflowId: string }[] }>('/v1/questions');
    expect(page.body.questions.map((question) => question.workflowId)).toEqual(['ask-1']);
  });

  it('a malformed cursor is a 400 naming the field', async () => {
    const bad = await authorized(app, { method: 'GET', url: '/v1/questions?cursor=not-ours' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'INVALID_INPUT', field: 'cursor' });
  });
});

/** Where `value` breaks the views' time rule: an instant (`…At`, `at`, `…Since`, `…Until`) that is not ISO 8601, a duration number not named `…Ms`. */
function timeRuleBreaches(value: unknown, path = '$'): string[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => timeRuleBreaches(item, `${path}[${index}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([name, field]) => {
    const where = `${path}.${name}`;
    const breaches: string[] = [];
    if ((/(At|Since|Until)$/.test(name) || name === 'at') && (typeof field !== 'string' || !ISO_INSTANT.test(field))) breaches.push(`${where} is not an ISO 8601 instant: ${JSON.stringify(field)}`);
    if (typeof field === 'number' && /(duration|delay|timeout|ttl|interval|elapsed|age|after|backoff|wait|time|timestamp)$/i.test(name) && !name.endsWith('Ms')) breaches.push(`${where} is a duration number not named …Ms`);
    return [...breaches, ...timeRuleBreaches(field, where)];
  });
}
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('every view writes instants as ISO 8601 and durations as …Ms', () => {
  it('the API view of finished workflows (one with a question and its answer), the listing and the questions listing', async () => {
    expect(timeRuleBreaches({ createdAt: 1_000, nested: [{ at: 'yesterday', waitTime: 5 }] })).toHaveLength(3);
    const finished = await eventually(async () => {
      const view = await get<{ state: string }>('/v1/workflows/ask-2');
      return view.body.state === 'COMPLETED' && view.body;
    }, 'ask-2 completed');
    const done = (await get<{ state: string; steps: { attempts: { finishedAt?: string }[] }[] }>('/v1/workflows/done-1')).body;
    expect(done.state).toBe('COMPLETED');
    expect(done.steps[0]!.attempts[0]!.finishedAt).toMatch(ISO_INSTANT);
    expect(JSON.stringify(finished)).toContain('"kind":"answer"');
    const listing = (await get<{ workflows: unknown[] }>('/v1/workflows?limit=500')).body;
    expect(listing.workflows).toHaveLength(4);
    const questions = (await get<{ questions: { askedAt?: string }[] }>('/v1/questions')).body;
    expect(questions.questions.map((question) => question.askedAt)).toEqual([expect.stringMatching(ISO_INSTANT)]);
    expect(timeRuleBreaches({ finished, done, listing, questions })).toEqual([]);
  });
});

describe('GET /v1/workflows summaries', () => {
  it('waiting=true and state=INPUT_REQUIRED give the workflow with an open question and its count', async () => {
    for (const url of ['/v1/workflows?waiting=true', '/v1/workflows?state=INPUT_REQUIRED']) {
      const page = await get<{ workflows: Summary[]; ids: string[] }>(url);
      expect(page.status).toBe(200);
      expect(page.body.workflows).toEqual([expect.objectContaining({ workflowId: 'ask-1', state: 'RUNNING', openQuestions: 1, waitingFor: 'INPUT_REQUIRED' })]);
      expect(page.body.ids).toEqual(['ask-1']);
    }
  });

  it('all workflows, newest first, paged', async () => {
    const seen: Summary[] = [];
    let cursor: string | undefined;
    do {
      const page = await get<{ workflows: Summary[]; cursor?: string }>(`/v1/workflows?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.body.workflows);
      cursor = page.body.cursor;
    } while (cursor);
    expect(seen.map((summary) => summary.workflowId).sort()).toEqual(['ask-1', 'ask-2', 'done-1', 'done-2']);
    const times = seen.map((summary) => Date.parse(summary.updatedAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(seen.find((summary) => summary.workflowId === 'done-1')).toMatchObject({ state: 'COMPLETED', openQuestions: 0 });
  });

  it('an unknown state is a 400', async () => {
    const bad = await authorized(app, { method: 'GET', url: '/v1/workflows?state=SLEEPING' });
    expect(bad.json()).toMatchObject({ code: 'INVALID_INPUT', field: 'state' });
  });
});

const form = (payload: Record<string, string>, headers: Record<string, string> = {}) => ({
  payload: new URLSearchParams(payload).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
});
const cookiesOf = (response: { headers: Record<string, unknown> }) => [response.headers['set-cookie'] ?? []].flat().map(String);

describe('/ui over HTTP: signing in', () => {
  it('without a session a browser gets the sign-in form (401, HTML), an API client a problem', async () => {
    const browser = await app.inject({ method: 'GET', url: '/ui/workflows/ask-1', headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(browser.statusCode).toBe(401);
    expect(browser.headers['content-type']).toMatch(/^text\/html/);
    expect(browser.body).toContain('<form class="sign-in" method="post" action="/ui/sign-in">');
    expect(browser.body).toContain('name="next" value="/ui/workflows/ask-1"');
    const board = await app.inject({ method: 'GET', url: '/admin/queues', headers: { accept: 'text/html' } });
    expect(board.statusCode).toBe(401);
    expect(board.body).toContain('name="next" value="/admin/queues"');
    const client = await app.inject({ method: 'GET', url: '/ui' });
    expect(client.statusCode).toBe(401);
    expect(client.json()).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('a token in the URL is never accepted: redirected to the URL without it, no cookie; a post with one is 400', async () => {
    for (const url of [`/ui?token=${TEST_API_TOKEN}`, `/ui/workflows/ask-1?state=RUNNING&token=${TEST_API_TOKEN}`, `/admin/queues?token=${TEST_API_TOKEN}`, `/ui/sign-in?token=${TEST_API_TOKEN}`]) {
      const response = await app.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
      expect(response.statusCode, url).toBe(303);
      expect(response.headers.location, url).not.toContain('token');
      expect(response.headers['set-cookie'], url).toBeUndefined();
    }
    const post = await app.inject({ method: 'POST', url: `/ui/sign-in?token=${TEST_API_TOKEN}`, ...form({ token: TEST_API_TOKEN }, { 'sec-fetch-site': 'same-origin' }) });
    expect(post.statusCode).toBe(400);
    expect(post.headers['set-cookie']).toBeUndefined();
  });

  it('the form sets one session for /ui and /admin/queues: HttpOnly, SameSite=Strict, Max-Age, no token in it; Secure behind https', async () => {
    const login = await app.inject({ method: 'POST', url: '/ui/sign-in', ...form({ token: TEST_API_TOKEN, next: '/ui/workflows/ask-1' }, { 'sec-fetch-site': 'same-origin' }) });
    expect(login.statusCode).toBe(303);
    expect(login.headers.location).toBe('/ui/workflows/ask-1');
    const cookies = cookiesOf(login);
    expect(cookies.map((cookie) => /Path=([^;]+)/.exec(cookie)?.[1]).sort()).toEqual(['/admin/queues', '/ui']);
    for (const cookie of cookies) {
      expect(cookie).toMatch(/^da2a_session=[^;]+; Path=[^;]+; HttpOnly; SameSite=Strict; Max-Age=28800$/);
      expect(cookie).not.toContain(TEST_API_TOKEN);
    }
    const session = cookies[0]!.split(';')[0]!;
    expect((await app.inject({ method: 'GET', url: '/ui', headers: { cookie: session } })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/admin/queues', headers: { cookie: session } })).statusCode).toBe(200);
    const proxied = await app.inject({ method: 'POST', url: '/ui/sign-in', ...form({ token: TEST_API_TOKEN }, { 'sec-fetch-site': 'same-origin', 'x-forwarded-proto': 'https' }) });
    for (const cookie of cookiesOf(proxied)) expect(cookie).toMatch(/; Secure$/);
  });

  it('a wrong token answers the form again with a visible message and sets no cookie; an open redirect is not followed', async () => {
    const wrong = await app.inject({ method: 'POST', url: '/ui/sign-in', ...form({ token: 'wrong', next: '/ui' }, { 'sec-fetch-site': 'same-origin' }) });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).toContain('That token was not accepted');
    expect(wrong.headers['set-cookie']).toBeUndefined();
    for (const next of ['https://evil.example/', '//evil.example/ui', '/\\evil.example', '/elsewhere']) {
      const login = await app.inject({ method: 'POST', url: '/ui/sign-in', ...form({ token: TEST_API_TOKEN, next }, { 'sec-fetch-site': 'same-origin' }) });
      expect(login.headers.location, next).toBe('/ui');
    }
  });

  it('sign-in and sign-out from another site are refused (403); sign-out ends the session', async () => {
    for (const headers of <Record<string, string>[]>[{ 'sec-fetch-site': 'cross-site' }, { origin: 'https://evil.example' }, {}]) {
      const login = await app.inject({ method: 'POST', url: '/ui/sign-in', ...form({ token: TEST_API_TOKEN }, headers) });
      expect(login.statusCode, JSON.stringify(headers)).toBe(403);
      expect(login.headers['set-cookie']).toBeUndefined();
    }
    const session = await signIn(app);
    expect((await app.inject({ method: 'POST', url: '/ui/sign-out', headers: { cookie: session, 'sec-fetch-site': 'cross-site' } })).statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: '/ui', headers: { cookie: session } })).statusCode).toBe(200);
    const out = await app.inject({ method: 'POST', url: '/ui/sign-out', headers: { cookie: session, 'sec-fetch-site': 'same-origin' } });
    expect(out.statusCode).toBe(200);
    expect(out.body).toContain('Signed out.');
    for (const cookie of cookiesOf(out)) expect(cookie).toMatch(/^da2a_session=; .*Max-Age=0/);
    // The same cookie, kept by someone, no longer opens the page on this server.
    expect((await app.inject({ method: 'GET', url: '/ui', headers: { cookie: session } })).statusCode).toBe(401);
  });

  it('a forged or expired session is refused', async () => {
    const session = await signIn(app);
    const [expiry, id] = session.slice('da2a_session='.length).split('.');
    for (const cookie of [`da2a_session=${expiry}.${id}.${'A'.repeat(43)}`, `da2a_session=${Date.now() - 1_000}.${id}.${'A'.repeat(43)}`, `da2a_session=${Number(expiry) + 1}.${session.split('.')[1]}.${session.split('.')[2]}`]) {
      expect((await app.inject({ method: 'GET', url: '/ui', headers: { cookie } })).statusCode, cookie).toBe(401);
    }
  });
});

describe('/ui over HTTP', () => {
  it("escapes the agent's text and answers 304 to a known ETag", async () => {
    const page = await authorized(app, { method: 'GET', url: '/ui/workflows/ask-1' });
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('Which city? &lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
    expect(page.body).not.toContain('<img src=x');
    const panel = await authorized(app, { method: 'GET', url: '/ui/workflows/ask-1/panel' });
    const etag = String(panel.headers.etag);
    const again = await authorized(app, { method: 'GET', url: '/ui/workflows/ask-1/panel', headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
  });

  it('CSRF: a session post without proof of this origin, or any post a browser marks cross-site, is 403 and journals nothing', async () => {
    const cookie = await signIn(app);
    const attempts: Record<string, string>[] = [
      { cookie },
      { cookie, 'sec-fetch-site': 'cross-site' },
      { cookie, 'sec-fetch-site': 'same-site' },
      { cookie, origin: 'https://elsewhere.example' },
      { authorization: `Bearer ${TEST_API_TOKEN}`, origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of attempts) {
      for (const [url, payload] of [['/ui/workflows/ask-1/steps/main/reply', { text: 'Rome' }], ['/ui/workflows/ask-1/cancel', {}], ['/ui/bulk', { action: 'cancel', idPrefix: 'ask' }]] as const) {
        const post = await app.inject({ method: 'POST', url, ...form(payload, headers) });
        expect(post.statusCode, `${url} ${JSON.stringify(headers)}`).toBe(403);
        expect(post.json()).toMatchObject({ code: 'FORBIDDEN' });
      }
    }
    const questions = await get<{ questions: { workflowId: string }[] }>('/v1/questions');
    expect(questions.body.questions.map((question) => question.workflowId)).toEqual(['ask-1']);
    expect((await get<{ state: string; cancelRequested: boolean }>('/v1/workflows/ask-1')).body).toMatchObject({ state: 'RUNNING', cancelRequested: false });
  });

  it('a blank answer is refused with the visible message, from the page and from the API; nothing is journaled', async () => {
    const cookie = await signIn(app);
    const fromPage = await app.inject({ method: 'POST', url: '/ui/workflows/ask-1/steps/main/reply', ...form({ text: '   \n ' }, { cookie, 'sec-fetch-site': 'same-origin', accept: 'text/html' }) });
    expect(fromPage.statusCode).toBe(400);
    expect(fromPage.body).toContain('<p id="notice" class="notice notice-refused" role="status" aria-live="polite">Refused: Write an answer first: a blank answer is not sent to the agent.</p>');
    const fromScript = await app.inject({ method: 'POST', url: '/ui/workflows/ask-1/steps/main/reply', ...form({ text: ' ' }, { cookie, 'sec-fetch-site': 'same-origin', 'x-da2a-ui': 'fetch' }) });
    expect(fromScript.json()).toMatchObject({ status: 400, code: 'INVALID_INPUT', field: 'text', detail: 'Write an answer first: a blank answer is not sent to the agent.' });
    const fromApi = await authorized(app, { method: 'POST', url: '/v1/workflows/ask-1/steps/main/reply', payload: { text: ' \t ' } });
    expect(fromApi.statusCode).toBe(400);
    expect(fromApi.json()).toMatchObject({ code: 'INVALID_INPUT', field: 'text' });
    expect((await get<{ questions: { workflowId: string }[] }>('/v1/questions')).body.questions.map((question) => question.workflowId)).toEqual(['ask-1']);
  });

  it('a form post without script goes through /v1 (same validation) and redirects back to a visible confirmation', async () => {
    const cookie = await signIn(app);
    const headers = { cookie, 'sec-fetch-site': 'same-origin' };
    const empty = await app.inject({ method: 'POST', url: '/ui/workflows/ask-1/steps/main/reply', ...form({ text: '' }, headers) });
    expect(empty.statusCode).toBe(400);
    const answer = await app.inject({ method: 'POST', url: '/ui/workflows/ask-1/steps/main/reply', ...form({ text: 'Rome' }, headers) });
    expect(answer.statusCode).toBe(303);
    expect(answer.headers.location).toBe('/ui/workflows/ask-1?done=answered');
    const confirmed = await app.inject({ method: 'GET', url: answer.headers.location, headers: { cookie } });
    expect(confirmed.body).toContain('role="status" aria-live="polite">Answer sent to the agent.');
    const view = await eventually(async () => {
      const current = (await authorized(app, { method: 'GET', url: '/v1/workflows/ask-1' })).json<{ state: string; steps: { attempts: { resultText?: string }[] }[] }>();
      return current.state === 'COMPLETED' && current;
    }, 'ask-1 completed');
    expect(view.steps[0]!.attempts[0]!.resultText).toBe('booked Rome');
  });
});
