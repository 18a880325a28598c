/**
 * F35: every HTML page (/ui, /ui/workflows/:id, their live panels, Bull Board and its assets) carries a
 * Content-Security-Policy with frame-ancestors 'none', X-Frame-Options DENY, nosniff and no-referrer, so no
 * other site can frame Retry, Abandon or an answer. (The browser tests check the pages still work under it.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import type { ApiServer } from '@durable-a2a/producer/server';
import { Journal } from '@durable-a2a/shared';
import { authorized, startTestServer } from '../harness/api-server.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);
const PREFIX = 'headers';
let app: ApiServer;

beforeAll(async () => {
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
  await app.ready();
  const definition = JSON.stringify({ workflowId: 'wf-1', steps: [{ name: 'main', agent: intentRow('wf-1').agentCardUrl, message: { text: 'do' } }] });
  await new Journal(redis(), { prefix: PREFIX }).createWorkflow('wf-1', { state: 'RUNNING', definition, createdAt: '1000', updatedAt: '1000' }, intentRow('wf-1'));
});
afterAll(async () => {
  await app?.close();
});

function expectFramingAndTypeProtection(headers: Record<string, unknown>, url: string): void {
  const policy = String(headers['content-security-policy'] ?? '');
  // Nothing from another origin: every fetch directive names this origin (and data:) only.
  expect(policy, url).not.toMatch(/https?:/);
  expect(policy, url).toMatch(/(^|;)\s*frame-ancestors 'none'/);
  expect(policy, url).toMatch(/(^|;)\s*script-src 'self'(;|$)/);
  expect(headers['x-frame-options'], url).toBe('DENY');
  expect(headers['x-content-type-options'], url).toBe('nosniff');
  expect(headers['referrer-policy'], url).toBe('no-referrer');
}

describe('F35: pages without framing and content-type protection', () => {
  it('every /ui page, panel and asset carries the headers', async () => {
    for (const url of ['/ui', '/ui/panel', '/ui/workflows/wf-1', '/ui/workflows/wf-1/panel', '/ui/assets/ui.js', '/ui/assets/ui.css', '/ui?state=RUNNING']) {
      const response = await authorized(app, { method: 'GET', url });
      expect(response.statusCode, url).toBe(200);
      expectFramingAndTypeProtection(response.headers, url);
    }
  });

  it('Bull Board and every asset its page names carry the headers', async () => {
    const board = await authorized(app, { method: 'GET', url: '/admin/queues' });
    expect(board.statusCode).toBe(200);
    expect(board.headers['content-type']).toMatch(/text\/html/);
    expectFramingAndTypeProtection(board.headers, '/admin/queues');
    // The page names nothing outside the deployment (its Google Fonts link is dropped) and links to /ui.
    expect(board.body).not.toMatch(/(?:src|href)="https?:/);
    expect(board.body).toContain('<a id="da2a-ui-link" href="/ui"');
    const assets = [...board.body.matchAll(/(?:src|href)="(static\/[^"]+)"/g)].map((match) => `/admin/queues/${match[1]}`);
    expect(assets.length).toBeGreaterThan(1);
    for (const url of assets) {
      const response = await authorized(app, { method: 'GET', url });
      expect(response.statusCode, url).toBe(200);
      expectFramingAndTypeProtection(response.headers, url);
    }
  });

  it('the sign-in form, the redirect away from a URL token, a refusal and a missing page carry them too', async () => {
    for (const [url, status] of [['/ui?token=wrong', 303], ['/ui/sign-in', 200], ['/admin/queues', 401], ['/ui/nowhere', 404]] as const) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(status);
      expectFramingAndTypeProtection(response.headers, url);
    }
  });
});
