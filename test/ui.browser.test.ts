/**
 * The page for people (/ui) in a real browser (issue 15): the travel demo's
 * hotel question is found from the list, answered from the page, and the
 * workflow moves on without a reload; a NEEDS_ATTENTION workflow is resolved
 * (abandon) from the page. Screenshots of the list and a workflow page go to
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
import { useRedisServer } from './harness/redis.ts';
import { TEST_API_TOKEN, listenOnLoopback, startTestServer } from './harness/api-server.ts';
import { chromiumMissing, launchChromium, watchContentSecurityPolicy } from './harness/chromium.ts';
import { eventually, startTestFleet } from './harness/fleet.ts';
import { bookingVerifier, startTravelCast, travelWorkflow, type TravelCast } from './harness/travel.ts';

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

  const signedIn = async (): Promise<Page> => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await context.newPage();
    watchContentSecurityPolicy(page, cspViolations);
    const response = await page.goto(`${baseUrl}/ui?token=${TEST_API_TOKEN}`);
    expect(response?.status()).toBe(200);
    expect(page.url()).toBe(`${baseUrl}/ui`);
    return page;
  };
  /** What the pages' Content-Security-Policy refused (F35: the policy must leave the pages working). */
  const cspViolations: string[] = [];
  afterAll(() => expect(cspViolations).toEqual([]));

  it('without credentials /ui answers 401', async () => {
    const page = await browser.newPage();
    expect((await page.goto(`${baseUrl}/ui`))?.status()).toBe(401);
    await page.close();
  });

  it("finds the travel demo's hotel question from the list, answers it on the workflow page, and sees the workflow move on", async () => {
    const { id } = await producer.startWorkflow(travelWorkflow('ui-trip'));
    await eventually(async () => (await producer.questions(id)).length > 0, 'the hotel question', 30_000);
    const page = await signedIn();
    await page.getByLabel('Show').selectOption('waiting');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/waiting=true|filter=waiting/);
    const question = page.locator('.question-summary', { hasText: 'two rooms or one?' });
    await question.waitFor({ timeout: 15_000 });
    await page.getByRole('row', { name: /ui-trip/ }).waitFor();
    const list = join(screenshots, 'ui-list.png');
    await page.screenshot({ path: list, fullPage: true });
    console.log(`screenshot of the list: ${list}`);

    await question.getByRole('link').click();
    await page.waitForURL(`${baseUrl}/ui/workflows/ui-trip#question-hotel.1`);
    await expect(page.locator('.agent-text').innerText()).resolves.toBe('two rooms or one?');
    // A marker that a full reload would wipe: everything below happens in place.
    await page.evaluate(() => ((window as unknown as { marker: string }).marker = 'same page'));
    await page.getByLabel('Your answer').fill('two');
    await page.getByRole('button', { name: 'Send answer' }).click();
    await page.locator('#announcer', { hasText: 'Answer sent.' }).waitFor();

    // The live region follows the workflow: the hotel completes with the answer, the car is tried twice, the saga undoes.
    await page.locator('#live', { hasText: 'hotel booked: two' }).waitFor({ timeout: 30_000 });
    await page.locator('.summary .badge', { hasText: 'COMPENSATED' }).waitFor({ timeout: 45_000 });
    expect(await page.evaluate(() => (window as unknown as { marker?: string }).marker)).toBe('same page');
    expect(await page.locator('.question').count()).toBe(0);
    await expect(page.getByRole('heading', { name: 'Compensations, in the order they ran' }).isVisible()).resolves.toBe(true);
    await expect(page.locator('.redelegation').first().innerText()).resolves.toContain('car.1 ended REJECTED');

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
    const page = await signedIn();
    await page.goto(`${baseUrl}/ui?state=NEEDS_ATTENTION`);
    await page.getByRole('link', { name: 'ui-attention' }).click();
    const decide = page.getByRole('region', { name: 'A person must decide' });
    await expect(decide.innerText()).resolves.toContain('effect could not be verified');
    await expect(page.locator('.evidence').first().innerText()).resolves.toContain('offline');
    await page.getByRole('button', { name: 'Abandon' }).click();
    await page.locator('#announcer', { hasText: /Decision recorded|Refused/ }).waitFor({ state: 'attached' });
    expect(await page.locator('#announcer').textContent()).toBe('Decision recorded.');
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
    // A second decision is refused by the API (same validation), and the page says so.
    const again = await page.evaluate(async (url) => {
      const response = await fetch(url, { method: 'POST', body: new URLSearchParams({ action: 'retry' }), headers: { 'x-da2a-ui': 'fetch' } });
      return { status: response.status, body: (await response.json()) as { code: string } };
    }, `${baseUrl}/ui/workflows/${id}/resolve`);
    expect(again).toMatchObject({ status: 409, body: { code: 'WORKFLOW_FINISHED' } });
    await page.context().close();
  }, 90_000);
});
