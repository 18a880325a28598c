/**
 * Issue 15, over HTTP without a browser: GET /v1/questions and the workflow
 * summaries (state, waiting, newest first, paged), and /ui's auth, ETag,
 * escaping and cross-site refusal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from './harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from './harness/agent.ts';
import { asksForInput, completesWith, completionSteps } from './harness/agent-behaviours.ts';
import { eventually, startTestFleet } from './harness/fleet.ts';
import { TEST_API_TOKEN, authorized, startTestServer } from './harness/api-server.ts';

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
  updatedAt: number;
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
    const times = seen.map((summary) => summary.updatedAt);
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(seen.find((summary) => summary.workflowId === 'done-1')).toMatchObject({ state: 'COMPLETED', openQuestions: 0 });
  });

  it('an unknown state is a 400', async () => {
    const bad = await authorized(app, { method: 'GET', url: '/v1/workflows?state=SLEEPING' });
    expect(bad.json()).toMatchObject({ code: 'INVALID_INPUT', field: 'state' });
  });
});

describe('/ui over HTTP', () => {
  it('401 without credentials; the token once sets the cookie for /ui and /admin/queues', async () => {
    expect((await app.inject({ method: 'GET', url: '/ui' })).statusCode).toBe(401);
    const login = await app.inject({ method: 'GET', url: `/ui?token=${TEST_API_TOKEN}` });
    expect(login.statusCode).toBe(303);
    expect(login.headers.location).toBe('/ui');
    const cookies = [login.headers['set-cookie']].flat().map(String);
    expect(cookies.map((cookie) => /Path=([^;]+)/.exec(cookie)?.[1]).sort()).toEqual(['/admin/queues', '/ui']);
    for (const cookie of cookies) expect(cookie).toMatch(/HttpOnly; SameSite=Strict/);
    const page = await app.inject({ method: 'GET', url: '/ui', headers: { cookie: cookies[0]!.split(';')[0]! } });
    expect(page.statusCode).toBe(200);
  });

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

  it('a cross-site form post is refused and journals nothing', async () => {
    const post = await authorized(app, {
      method: 'POST',
      url: '/ui/workflows/ask-1/steps/main/reply',
      payload: 'text=Rome',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(post.statusCode).toBe(401);
    const questions = await get<{ questions: { workflowId: string }[] }>('/v1/questions');
    expect(questions.body.questions.map((question) => question.workflowId)).toEqual(['ask-1']);
  });

  it('a form post without script goes through /v1 (same validation) and redirects back', async () => {
    const empty = await authorized(app, { method: 'POST', url: '/ui/workflows/ask-1/steps/main/reply', payload: 'text=', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(empty.statusCode).toBe(400);
    // A plain form post gets a page that says why (a script gets the API's problem answer).
    expect(empty.headers['content-type']).toMatch(/^text\/html/);
    expect(empty.body).toMatch(/<p role="alert" class="error">Refused: [^<]*must not be empty/);
    const answer = await authorized(app, { method: 'POST', url: '/ui/workflows/ask-1/steps/main/reply', payload: 'text=Rome', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(answer.statusCode).toBe(303);
    expect(answer.headers.location).toBe('/ui/workflows/ask-1');
    const view = await eventually(async () => {
      const current = (await authorized(app, { method: 'GET', url: '/v1/workflows/ask-1' })).json<{ state: string; steps: { attempts: { resultText?: string }[] }[] }>();
      return current.state === 'COMPLETED' && current;
    }, 'ask-1 completed');
    expect(view.steps[0]!.attempts[0]!.resultText).toBe('booked Rome');
  });
});
