/**
 * The page for people (/ui) in a real browser (docs/people.md "The page for people (`/ui`)"): signing in
 * with the form; the travel demo's hotel question is found from the list, shown
 * next to the request, a blank answer refused visibly, answered from the page
 * with a visible confirmation, and the workflow moves on without a reload;
 * search by metadata and id prefix; cancel from the page, headed "Cancelled and
 * undone"; a NEEDS_ATTENTION workflow is resolved (abandon) from the page. No
 * request leaves 127.0.0.1. Screenshots of the list and a workflow page go to
 * a temp dir (paths printed; `DA2A_UI_SCREENSHOT_DIR` overrides the dir).
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { TEST_API_TOKEN, listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { chromiumMissing, launchChromium, loopbackPages } from '../harness/chromium.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { bookingVerifier, startTravelCast, travelWorkflow, type TravelCast } from '../harness/travel.ts';

if (chromiumMissing) console.warn(`skipping the /ui browser test: ${chromiumMissing}`);

const redisServer = useRedisServer();
const PREFIX = 'ui';
const screenshots = process.env.DA2A_UI_SCREENSHOT_DIR ?? mkdtempSync(join(tmpdir(), 'da2a-ui-'));

describe.skipIf(chromiumMissing !== undefined)('/ui in chromium', () => {
  let cast: TravelCast;
  let producer: Producer;
  let fleet: Fleet;
  let app: ApiServer;
  let browser: Browser;
  let baseUrl: string;

  beforeAll(async () => {
    mkdirSync(screenshots, { recursive: true });
    cast = await startTravelCast();
    producer = createProducer({ redis: redisServer().url, prefix: PREFIX, addressPolicy: { allowLoopback: true } });
    for (const agent of [cast.flight, cast.hotel, cast.car1, cast.car2]) await producer.registerAgent(agent.cardUrl);
    // `unsure`: a read path that cannot tell, so a completed step needs a person.
    const unsure = { verify: async () => ({ effect: 'unknown' as const, evidence: { ledger: 'offline' } }) };
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX, verifiers: { booking: bookingVerifier(cast.bookings.url), unsure } });
    app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, producer });
    baseUrl = await listenOnLoopback(app);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await fleet?.close();
    await producer?.close();
    await cast?.close();
  });

  const { newPage, offSite, cspViolations } = loopbackPages(() => browser);
  // Nothing leaves 127.0.0.1, and the Content-Security-Policy refuses nothing the pages need.
  afterAll(() => expect(offSite).toEqual([]));
  afterAll(() => expect(cspViolations).toEqual([]));
  /** Signs in with the form, as a person does: the page without a session is the form; the token is posted once. */
  const signedIn = async (path = '/ui'): Promise<Page> => {
    const page = await newPage();
    const response = await page.goto(`${baseUrl}${path}`);
    expect(response?.status()).toBe(401);
    await page.getByLabel('API token').fill(TEST_API_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${baseUrl}${path}`);
    return page;
  };
  /** The visible confirmation (or refusal) of the last action. */
  const notice = async (page: Page, text: string | RegExp) => {
    const region = page.locator('#notice', { hasText: text });
    await region.waitFor({ state: 'visible', timeout: 15_000 });
    expect(await region.isVisible()).toBe(true);
    return region;
  };

  it('signs in with the form: an HttpOnly, SameSite=Strict session cookie, no token in any URL; signs out', async () => {
    const page = await newPage();
    const first = await page.goto(`${baseUrl}/ui/agents`);
    expect(first?.status()).toBe(401);
    expect(first?.headers()['content-type']).toMatch(/^text\/html/);
    await page.getByLabel('API token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await notice(page, 'That token was not accepted');
    await page.getByLabel('API token').fill(TEST_API_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${baseUrl}/ui/agents`);
    await page.getByRole('heading', { name: 'Agents' }).waitFor();
    // Card names, not only URLs.
    await page.getByRole('cell', { name: /Hotel agent/ }).first().waitFor();
    const cookies = await page.context().cookies();
    expect(cookies.filter((cookie) => cookie.name === 'da2a_session').map((cookie) => [cookie.path, cookie.httpOnly, cookie.sameSite])).toEqual(
      expect.arrayContaining([['/ui', true, 'Strict'], ['/admin/queues', true, 'Strict']]),
    );
    expect(cookies.some((cookie) => cookie.value.includes(TEST_API_TOKEN))).toBe(false);
    // A token in the URL is not a credential: the page drops it and asks to sign in.
    const other = await newPage();
    const withToken = await other.goto(`${baseUrl}/ui?token=${TEST_API_TOKEN}`);
    expect(withToken?.status()).toBe(401);
    expect(other.url()).toBe(`${baseUrl}/ui`);
    expect(await other.context().cookies()).toHaveLength(0);
    await other.context().close();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await notice(page, 'Signed out.');
    expect((await page.goto(`${baseUrl}/ui`))?.status()).toBe(401);
    await page.context().close();
  });

  it("finds the hotel's question, sees the request next to it, refuses a blank answer visibly, answers, and sees the confirmation", async () => {
    const { id } = await producer.startWorkflow({ ...travelWorkflow('ui-trip'), metadata: { customer: 'acme-ui' } });
    await eventually(async () => (await producer.questions(id)).length > 0, 'the hotel question', 30_000);
    const page = await signedIn();
    await page.getByLabel('Show').selectOption('waiting');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/waiting=true|filter=waiting/);
    const question = page.locator('.question-summary', { hasText: 'two rooms or one?' });
    await question.waitFor({ timeout: 15_000 });
    const row = page.getByRole('row', { name: /ui-trip/ });
    await expect(row.innerText()).resolves.toContain('an answer');
    await expect(row.innerText()).resolves.not.toContain('INPUT_REQUIRED');
    const list = join(screenshots, 'ui-list.png');
    await page.screenshot({ path: list, fullPage: true });
    console.log(`screenshot of the list: ${list}`);

    await question.getByRole('link').click();
    await page.waitForURL(`${baseUrl}/ui/workflows/ui-trip#question-hotel.1`);
    await page.getByRole('heading', { name: 'Needs a person: an answer' }).waitFor();
    await expect(page.locator('.summary').innerText()).resolves.toContain('Waiting for: an answer');
    const asked = page.locator('#question-hotel\\.1');
    await expect(asked.locator('.request').innerText()).resolves.toBe('Book a hotel in Manhattan for 3 nights');
    await expect(asked.locator('.agent-text').innerText()).resolves.toBe('two rooms or one?');
    await expect(page.locator('#attempt-hotel\\.1').innerText()).resolves.toContain('Hotel agent');
    // One time format on the page.
    const times = await page.locator('time').allInnerTexts();
    expect(times.length).toBeGreaterThan(2);
    for (const text of times) expect(text).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
    // A marker that a full reload would wipe: everything below happens in place.
    await page.evaluate(() => ((window as unknown as { marker: string }).marker = 'same page'));

    await page.getByLabel('Your answer').fill('   ');
    await page.getByRole('button', { name: 'Send answer' }).click();
    await notice(page, 'a blank answer is not sent to the agent');
    expect(cast.hotel.receivedMessages.filter((message) => message.text?.trim() === '')).toHaveLength(0);

    await page.getByLabel('Your answer').fill('two');
    await page.getByRole('button', { name: 'Send answer' }).click();
    await notice(page, 'Answer sent to the agent.');
    // One read renders the panel: the question is never gone while its attempt still says INPUT_REQUIRED.
    const consistent = await page.evaluate(() => {
      const attempt = document.querySelector('#attempt-hotel\\.1')?.textContent ?? '';
      const question = document.querySelector('#question-hotel\\.1');
      return !/INPUT_REQUIRED/.test(attempt) || question !== null;
    });
    expect(consistent).toBe(true);

    // The live region follows the workflow: the hotel completes with the answer, the car is tried twice, the saga undoes.
    await page.locator('#live', { hasText: 'hotel booked: two' }).waitFor({ timeout: 30_000 });
    await page.locator('.summary .badge', { hasText: 'COMPENSATED' }).waitFor({ timeout: 45_000 });
    expect(await page.evaluate(() => (window as unknown as { marker?: string }).marker)).toBe('same page');
    expect(await page.locator('.question').count()).toBe(0);
    // Not cancelled: a step failed, and what was done was undone.
    await page.getByRole('heading', { name: 'Failed, and undone' }).waitFor();
    await expect(page.getByRole('heading', { name: 'Compensations, in the order they ran' }).isVisible()).resolves.toBe(true);
    await expect(page.locator('.redelegation').first().innerText()).resolves.toContain('car.1 ended REJECTED');
    // Evidence is a definition list, not JSON.
    await page.locator('#attempt-hotel\\.1 dl.evidence dt').first().waitFor();

    const view = await producer.get(id);
    expect(view.state).toBe('COMPENSATED');
    const hotel = view.steps.find((step) => step.name === 'hotel')!.attempts[0]!;
    expect(hotel).toMatchObject({ state: 'COMPLETED', resultText: 'hotel booked: two', effect: 'present' });
    // The page's answer went through POST /v1/…/reply: one journaled reply, sent on the same task.
    const replies = cast.hotel.receivedMessages.filter((message) => message.taskId === hotel.taskId && message.text === 'two');
    expect(replies).toHaveLength(1);
    expect(hotel.replyMessageId).toBe(replies[0]!.messageId);

    const workflow = join(screenshots, 'ui-workflow.png');
    await page.screenshot({ path: workflow, fullPage: true });
    console.log(`screenshot of a workflow page: ${workflow}`);
    await page.context().close();
  }, 120_000);

  it('searches by metadata and by id prefix', async () => {
    await producer.startWorkflow({ ...travelWorkflow('ui-search-other'), metadata: { customer: 'someone-else' } });
    await eventually(async () => (await producer.search({ metadata: { customer: 'someone-else' } })).items.length === 1, 'the other workflow indexed', 15_000);
    const page = await signedIn();
    await page.getByLabel('Metadata (key=value)').fill('customer=acme-ui');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/meta=customer%3Dacme-ui/);
    await page.getByRole('heading', { name: /Workflows matching metadata customer=acme-ui/ }).waitFor();
    const rows = page.locator('table.workflows tbody tr');
    await expect(rows.allInnerTexts()).resolves.toEqual([expect.stringContaining('ui-trip')]);
    await page.getByLabel('Metadata (key=value)').fill('');
    await page.getByLabel('Workflow id starts with').fill('ui-search');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/idPrefix=ui-search/);
    await expect(page.locator('table.workflows tbody tr').allInnerTexts()).resolves.toEqual([expect.stringContaining('ui-search-other')]);
    await producer.cancel('ui-search-other').catch(() => undefined);
    await page.context().close();
  }, 60_000);

  it('cancels a running workflow from the page; the cancelled, undone workflow is headed so, never "failed"', async () => {
    const { id } = await producer.startWorkflow(travelWorkflow('ui-cancel'));
    await eventually(async () => (await producer.questions(id)).length > 0, 'the hotel question (the flight is booked)', 30_000);
    const page = await signedIn(`/ui/workflows/${id}`);
    await page.getByRole('button', { name: 'Cancel workflow' }).click();
    await notice(page, 'Cancel requested');
    await page.getByRole('heading', { name: 'Cancelled and undone' }).waitFor({ timeout: 45_000 });
    expect(await page.getByRole('heading', { name: /fail/i }).count()).toBe(0);
    const view = await producer.get(id);
    expect(view).toMatchObject({ state: 'COMPENSATED', cancelRequested: true });
    expect(view.steps.find((step) => step.name === 'flight')!.compensations).toHaveLength(1);
    await page.context().close();
  }, 90_000);

  it('resolves a NEEDS_ATTENTION workflow (abandon) from the page', async () => {
    const definition = {
      workflowId: 'ui-attention',
      steps: [
        {
          name: 'flight',
          agent: cast.flight.cardUrl,
          message: { text: 'Book a flight LHR to JFK on 2026-12-20' },
          verifier: { name: 'unsure', params: {} },
          compensation: { agent: cast.flight.cardUrl, message: { text: 'Cancel the flight booking' } },
        },
      ],
    };
    const { id } = await producer.startWorkflow(definition);
    await eventually(async () => (await producer.get(id)).state === 'NEEDS_ATTENTION', 'NEEDS_ATTENTION', 30_000);
    const page = await signedIn('/ui?state=NEEDS_ATTENTION');
    await page.getByRole('link', { name: 'ui-attention' }).click();
    await page.getByRole('heading', { name: 'Needs a person: a decision' }).waitFor();
    const decide = page.getByRole('region', { name: 'A person must decide' });
    await expect(decide.innerText()).resolves.toContain('effect could not be verified');
    // The verifier's evidence as a definition list (`ledger: offline`), not JSON.
    await expect(page.locator('#attempt-flight\\.1 dl.evidence').innerText()).resolves.toMatch(/ledger\s+offline/);
    await page.getByRole('button', { name: 'Abandon' }).click();
    await notice(page, 'Abandon recorded');
    await decide.waitFor({ state: 'detached', timeout: 15_000 });
    const settled = await eventually(async () => {
      const view = await producer.get(id);
      return ['COMPENSATED', 'CANCELED', 'FAILED'].includes(view.state) && view;
    }, 'the workflow settled after the decision', 30_000);
    expect(settled.cancelRequested).toBe(true);
    // The undo ran once, and the page shows it.
    const undo = settled.steps[0]!.compensations;
    expect(undo).toHaveLength(1);
    await page.locator('.summary .badge', { hasText: settled.state }).waitFor({ timeout: 15_000 });
    await page.locator('#attempt-flight\\.1\\.undo').waitFor();
    // A second decision is refused by the API (same validation), and the page says so, visibly.
    await page.evaluate(() => {
      const form = document.createElement('form');
      form.method = 'post';
      form.action = location.pathname + '/resolve';
      form.dataset.action = 'resolve';
      form.innerHTML = '<input type="hidden" name="action" value="retry"><button type="submit">again</button>';
      document.querySelector('main')!.append(form);
    });
    await page.getByRole('button', { name: 'again' }).click();
    await notice(page, /^Refused: /);
    await page.context().close();
  }, 90_000);
});
