/**
 * Bull Board in a real browser: Debian chromium, headless, via playwright-core.
 * Skips (with the reason) only when no chromium binary exists.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import { Queue } from 'bullmq';
import type { Browser } from 'playwright-core';
import { ALL_QUEUES, queuePrefix } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from './harness/redis.ts';
import { TEST_API_TOKEN, listenOnLoopback, startTestServer } from './harness/api-server.ts';
import { chromiumMissing, launchChromium, watchContentSecurityPolicy } from './harness/chromium.ts';

if (chromiumMissing) console.warn(`skipping the Bull Board browser test: ${chromiumMissing}`);

const redisServer = useRedisServer();
const PREFIX = 'board';

describe.skipIf(chromiumMissing !== undefined)('Bull Board at /admin/queues in chromium', () => {
  let app: ApiServer;
  let browser: Browser;
  let baseUrl: string;
  const redis = useRedisClient(redisServer);

  beforeAll(async () => {
    // A few jobs nobody processes, so the queues have something to show.
    for (const name of ALL_QUEUES) {
      const queue = new Queue(name, { connection: redis(), prefix: queuePrefix(PREFIX) });
      await queue.add('board-test', { workflowId: `board-${name}`, delegationId: 'main.1' }, { jobId: `board|${name}` });
      await queue.close();
    }
    app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
    baseUrl = await listenOnLoopback(app);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('without credentials the board answers 401', async () => {
    const page = await browser.newPage();
    const response = await page.goto(`${baseUrl}/admin/queues`);
    expect(response?.status()).toBe(401);
    await page.close();
  });

  it('?token= sets the HttpOnly cookie, drops the token from the URL, and the board lists all five queues', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const cspViolations: string[] = [];
    watchContentSecurityPolicy(page, cspViolations);
    const response = await page.goto(`${baseUrl}/admin/queues?token=${TEST_API_TOKEN}`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.url()).toBe(`${baseUrl}/admin/queues`);
    const cookies = await context.cookies();
    expect(cookies.find((cookie) => cookie.name === 'da2a_admin')).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/admin/queues' });
    expect(cookies.some((cookie) => cookie.value.includes(TEST_API_TOKEN))).toBe(false);
    for (const name of ['send', 'follow', 'reconcile', 'verify', 'compensate']) {
      await page.getByText(name, { exact: true }).first().waitFor({ timeout: 15_000 });
    }
    const text = await page.locator('body').innerText();
    for (const name of ['send', 'follow', 'reconcile', 'verify', 'compensate']) expect(text).toContain(name);
    // The header links to the page for people (miscLinks may sit behind a menu button).
    if ((await page.locator('a[href="/ui"]').count()) === 0) await page.locator('header button').last().click();
    await page.locator('a[href="/ui"]').first().waitFor({ state: 'attached', timeout: 5_000 });
    expect(await page.locator('a[href="/ui"]').first().innerText()).toContain('Workflows and questions');
    // F35: the board works under its Content-Security-Policy.
    expect(cspViolations).toEqual([]);
    await context.close();
  });

  it('a wrong ?token= is refused and sets no cookie', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const response = await page.goto(`${baseUrl}/admin/queues?token=wrong`);
    expect(response?.status()).toBe(401);
    expect(await context.cookies()).toHaveLength(0);
    await context.close();
  });
});
