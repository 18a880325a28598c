/**
 * Bull Board in a real browser: Debian chromium, headless, via playwright-core: opened through the /ui sign-in
 * form, a visible header link to /ui, nothing requested outside the deployment.
 * Skips (with the reason) only when no chromium binary exists.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import { Queue } from 'bullmq';
import type { Browser } from 'playwright-core';
import { ALL_QUEUES, queuePrefix } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { TEST_API_TOKEN, listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { chromiumMissing, launchChromium, watchContentSecurityPolicy } from '../harness/chromium.ts';

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

  it('without a session the board answers the sign-in form (401)', async () => {
    const page = await browser.newPage();
    const response = await page.goto(`${baseUrl}/admin/queues`);
    expect(response?.status()).toBe(401);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.close();
  });

  it('the sign-in form opens the board (HttpOnly cookie, no token in the URL); its header links visibly to /ui; nothing is requested off 127.0.0.1', async () => {
    const context = await browser.newContext();
    const offSite: string[] = [];
    context.on('request', (request) => {
      const url = new URL(request.url());
      if (url.hostname !== '127.0.0.1' && url.protocol !== 'data:') offSite.push(request.url());
    });
    const page = await context.newPage();
    const cspViolations: string[] = [];
    watchContentSecurityPolicy(page, cspViolations);
    expect((await page.goto(`${baseUrl}/admin/queues`))?.status()).toBe(401);
    await page.getByLabel('API token').fill(TEST_API_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${baseUrl}/admin/queues`);
    const cookies = await context.cookies();
    expect(cookies.find((cookie) => cookie.name === 'da2a_session' && cookie.path === '/admin/queues')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(cookies.some((cookie) => cookie.value.includes(TEST_API_TOKEN))).toBe(false);
    for (const name of ['send', 'follow', 'reconcile', 'verify', 'compensate']) {
      await page.getByText(name, { exact: true }).first().waitFor({ timeout: 15_000 });
    }
    const text = await page.locator('body').innerText();
    for (const name of ['send', 'follow', 'reconcile', 'verify', 'compensate']) expect(text).toContain(name);
    // The link to the page for people is in the header, visible without opening a menu, and leads there.
    const link = page.getByRole('link', { name: 'Workflows and questions (/ui)' }).first();
    expect(await link.isVisible()).toBe(true);
    const box = await link.boundingBox();
    expect(box!.y).toBeLessThan(60);
    const shot = join(mkdtempSync(join(tmpdir(), 'da2a-board-')), 'board.png');
    await page.screenshot({ path: shot });
    console.log(`screenshot of the board: ${shot}`);
    await link.click();
    await page.waitForURL(`${baseUrl}/ui`);
    await page.getByRole('heading', { name: 'Workflows', exact: true, level: 1 }).waitFor();
    // F35: the board works under its Content-Security-Policy, which allows no other origin.
    expect(cspViolations).toEqual([]);
    expect(offSite).toEqual([]);
    await context.close();
  });

  it('a ?token= is never a credential: no cookie, the sign-in form', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const response = await page.goto(`${baseUrl}/admin/queues?token=${TEST_API_TOKEN}`);
    expect(response?.status()).toBe(401);
    expect(page.url()).toBe(`${baseUrl}/admin/queues`);
    expect(await context.cookies()).toHaveLength(0);
    await context.close();
  });
});
