/**
 * People in a real browser (docs/people.md), with real Redis, a real fleet, a demo agent that asks a question and the HTTP
 * service on loopback: a question answered from its signed answer link with no session and no token, then the
 * finished workflow's /ui page (signed in with the form) and the API view show the question, the answer and who
 * gave it (`link <id>`); a question that expires takes its `onExpiry` action (`answer`: the default answer), and the
 * /ui page's history says so. No request leaves 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { HistoryEntryView, WorkflowView } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { TEST_API_TOKEN, authorized, listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps } from '../harness/agent-behaviours.ts';
import { chromiumMissing, launchChromium, loopbackPages } from '../harness/chromium.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

if (chromiumMissing) console.warn(`skipping the people browser test: ${chromiumMissing}`);

const redisServer = useRedisServer();
const PREFIX = 'people-browser';
const LINKS = { secret: 'a-link-secret-of-at-least-32-characters!', baseUrl: 'http://durable-a2a.test' };
const QUESTION = 'Which city should the table be in?';
const FINISHED = ['COMPLETED', 'FAILED', 'CANCELED', 'COMPENSATED', 'NEEDS_ATTENTION'];

describe.skipIf(chromiumMissing !== undefined)('people in chromium', () => {
  let agent: DemoAgentHandle;
  let app: ApiServer;
  let fleet: Fleet;
  let browser: Browser;
  let baseUrl: string;

  beforeAll(async () => {
    agent = await startDemoAgent({ behaviour: asksForInput(QUESTION, (answer) => completionSteps(`table booked in ${answer}`)) });
    app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, answerLinks: LINKS });
    baseUrl = await listenOnLoopback(app);
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX, answerLinks: LINKS });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await fleet?.close();
    await app?.close();
    await agent?.close();
  });

  const { newPage, offSite, cspViolations } = loopbackPages(() => browser);
  // Nothing leaves 127.0.0.1, and the Content-Security-Policy refuses nothing the pages need.
  afterAll(() => expect(offSite).toEqual([]));
  afterAll(() => expect(cspViolations).toEqual([]));
  /** Signs in with the form, as a person does, in a fresh context; ends on `path`. */
  const signedIn = async (path: string): Promise<Page> => {
    const page = await newPage();
    expect((await page.goto(`${baseUrl}${path}`))?.status()).toBe(401);
    await page.getByLabel('API token').fill(TEST_API_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${baseUrl}${path}`);
    return page;
  };
  const viewOf = async (id: string) => (await authorized(app, { method: 'GET', url: `/v1/workflows/${id}` })).json<WorkflowView>();
  const finished = (id: string, timeoutMs = 45_000) =>
    eventually(
      async () => {
        const view = await viewOf(id);
        return FINISHED.includes(view.state) && view;
      },
      `${id} finished`,
      timeoutMs,
    );
  /** The History section's entries as the page shows them. */
  const historyOf = (page: Page) => page.locator('section[aria-labelledby="history-heading"] li.history-entry');

  it('answers from the signed link with no session and no token; the finished workflow page and the API view show the question, the answer and who gave it', async () => {
    const created = await authorized(app, { method: 'POST', url: '/v1/delegations', payload: { agent: agent.cardUrl, text: 'Book a table for two', idempotencyKey: 'people-link' } });
    expect(created.statusCode).toBe(201);
    const id = created.json<{ id: string }>().id;
    const link = await eventually(async () => (await viewOf(id)).openQuestions[0]?.answerLink, 'the answer link in the API view', 30_000);
    // The link as the deployment signed it, opened on this deployment's address (the test's base URL is a placeholder).
    const linkUrl = `${baseUrl}${new URL(link.url).pathname}`;

    const page = await newPage();
    expect(await page.context().cookies()).toHaveLength(0);
    const opened = await page.goto(linkUrl);
    expect(opened?.status()).toBe(200);
    await page.getByRole('heading', { name: 'A question for you' }).waitFor();
    await expect(page.locator('blockquote').innerText()).resolves.toBe(QUESTION);
    await page.getByLabel('Your answer').fill('Lyon');
    await page.getByRole('button', { name: 'Send answer' }).click();
    await page.getByRole('heading', { name: 'Answer sent' }).waitFor({ timeout: 15_000 });
    await page.getByRole('status').filter({ hasText: 'your answer was recorded' }).waitFor();
    expect(await page.context().cookies()).toHaveLength(0);
    // Used once: opening the link again says so.
    expect((await page.goto(linkUrl))?.status()).toBe(410);
    await page.getByRole('heading', { name: 'This question was already answered' }).waitFor();
    await page.context().close();

    const view = await finished(id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ resultText: 'table booked in Lyon', replyBy: `link ${link.id}` });
    expect(view.history).toContainEqual(expect.objectContaining({ kind: 'question', text: QUESTION }));
    expect(view.history).toContainEqual(expect.objectContaining({ kind: 'answer', text: 'Lyon', by: `link ${link.id}` }));
    expect(agent.receivedMessages.filter((message) => message.text === 'Lyon')).toHaveLength(1);

    const workflowPage = await signedIn(`/ui/workflows/${id}`);
    await workflowPage.getByRole('heading', { name: 'History' }).waitFor({ timeout: 15_000 });
    const question = historyOf(workflowPage).filter({ has: workflowPage.locator('.history-summary', { hasText: 'asked' }) });
    await expect(question.locator('blockquote').innerText()).resolves.toBe(QUESTION);
    const answer = historyOf(workflowPage).filter({ hasText: `answered by link ${link.id}` });
    await expect(answer.locator('blockquote').innerText()).resolves.toBe('Lyon');
    await workflowPage.context().close();
  }, 120_000);

  it("an expired question takes its onExpiry action ('answer'): the default answer is sent, the workflow completes, and its /ui page's history says so", async () => {
    const definition = {
      workflowId: 'people-expiry',
      steps: [{ name: 'table', agent: agent.cardUrl, message: { text: 'Book a table for four' }, question: { expiresAfterMs: 1_500, onExpiry: 'answer', defaultAnswer: 'Paris' } }],
    };
    const started = await authorized(app, { method: 'POST', url: '/v1/workflows', payload: definition });
    expect(started.statusCode).toBe(201);
    const id = started.json<{ id: string }>().id;
    await eventually(async () => (await viewOf(id)).openQuestions.length === 1, 'the question opened', 30_000);
    const view = await finished(id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ resultText: 'table booked in Paris', replyBy: 'expiry', questionExpiry: 'answer' });
    const expired = view.history.find((entry) => entry.kind === 'question-expired') as HistoryEntryView;
    expect(expired).toMatchObject({ step: 'table', onExpiry: 'answer', text: 'Paris', by: 'expiry' });
    expect(expired.summary).toContain('the question expired unanswered; the default answer was sent');
    expect(view.history.map((entry) => entry.kind)).toEqual(['question', 'question-expired']);
    expect(agent.receivedMessages.filter((message) => message.text === 'Paris')).toHaveLength(1);

    const page = await signedIn(`/ui/workflows/${id}`);
    await page.getByRole('heading', { name: 'History' }).waitFor({ timeout: 15_000 });
    const entry = historyOf(page).filter({ hasText: 'the question expired unanswered' });
    await expect(entry.locator('.history-summary').innerText()).resolves.toContain('the default answer was sent');
    await expect(entry.locator('blockquote').innerText()).resolves.toBe('Paris');
    await page.context().close();
  }, 120_000);
});
