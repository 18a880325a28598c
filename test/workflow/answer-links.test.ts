/**
 * Signed answer links (docs/people.md "Signed answer links"): a person answers one open question without an API token;
 * the link is refused after use, after expiry, once the question is closed, and when tampered with.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import { ANSWERS_PER_WORKFLOW_MAX, signAnswerLink } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { fillAnswerIndex } from '../harness/answers.ts';
import { authorized, startTestServer } from '../harness/api-server.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

const LINKS = { secret: 'a-link-secret-of-at-least-32-characters!', baseUrl: 'http://durable-a2a.test' };
const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let agent: DemoAgentHandle;
let app: ApiServer;
let fleet: Fleet;

beforeAll(async () => {
  agent = await startDemoAgent({ behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked ${answer}`)) });
  app = startTestServer({ redisUrl: redisServer().url, prefix: 'links', answerLinks: LINKS });
  await app.ready();
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: 'links', answerLinks: LINKS });
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await agent?.close();
});

/** Starts a delegation and returns its open question's link as the API view shows it. */
async function openQuestion(key: string) {
  const created = await authorized(app, { method: 'POST', url: '/v1/delegations', payload: { agent: agent.cardUrl, text: 'book a table', idempotencyKey: key } });
  expect(created.statusCode).toBe(201);
  const link = await eventually(async () => {
    const view = (await authorized(app, { method: 'GET', url: `/v1/workflows/${key}` })).json();
    return view.openQuestions?.[0]?.answerLink as { id: string; url: string; expiresAt: string } | undefined;
  }, `answer link of ${key}`);
  return { ...link, path: new URL(link.url).pathname };
}

const answerVia = (path: string, answer: string) => app.inject({ method: 'POST', url: path, payload: new URLSearchParams({ answer }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
const answersSeen = (text: string) => agent.receivedMessages.filter((message) => JSON.stringify(message).includes(text)).length;

describe('signed answer links', () => {
  it('a link whose workflow holds its most answers is refused (409, nothing written), and the agent gets nothing', async () => {
    const link = await openQuestion('link-full');
    await fillAnswerIndex(redis(), fleet.context.journal, 'link-full', ANSWERS_PER_WORKFLOW_MAX);
    const refused = await answerVia(link.path, 'Lyon-over-limit');
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toContain('This workflow holds its most answers');
    expect((await fleet.context.journal.getDelegation({ workflowId: 'link-full', delegationId: 'main.1' }))!.replyMessageId).toBeUndefined();
    expect(answersSeen('Lyon-over-limit')).toBe(0);
  });

  it('answers without a token: the agent gets the answer once, recorded as answered by the link; a second use is refused', async () => {
    const link = await openQuestion('link-once');
    const page = await app.inject({ method: 'GET', url: link.path });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Which city?');
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.body).not.toMatch(/<script|https?:\/\/(?!durable-a2a\.test)/);

    const blank = await answerVia(link.path, '   ');
    expect(blank.statusCode).toBe(400);
    const sent = await answerVia(link.path, 'Lyon-by-link');
    expect(sent.statusCode).toBe(200);
    const view = await eventually(async () => {
      const current = (await authorized(app, { method: 'GET', url: '/v1/workflows/link-once' })).json();
      return current.state === 'COMPLETED' && current;
    }, 'completed after the linked answer');
    expect(view.steps[0].attempts[0].replyBy).toBe(`link ${link.id}`);
    // The workflow's history keeps the answer with who gave it (the link), as for an answer through the API.
    expect(view.history).toContainEqual(expect.objectContaining({ kind: 'answer', by: `link ${link.id}`, text: 'Lyon-by-link' }));
    expect(answersSeen('Lyon-by-link')).toBe(1);

    expect((await answerVia(link.path, 'Lyon-by-link')).statusCode).toBe(410);
    expect((await answerVia(link.path, 'Marseille')).statusCode).toBe(410);
    expect((await app.inject({ method: 'GET', url: link.path })).statusCode).toBe(410);
    expect(answersSeen('Marseille')).toBe(0);
  });

  it('refuses an expired link, a closed question and a tampered signature', async () => {
    const link = await openQuestion('link-refusals');
    const record = (await fleet.context.journal.getDelegation({ workflowId: 'link-refusals', delegationId: 'main.1' }))!;
    const claim = { workflowId: 'link-refusals', delegationId: 'main.1', questionKey: record.questionKey!, expiresAtMs: Date.now() - 1 };
    expect((await answerVia(`/answer/${signAnswerLink(LINKS.secret, claim)}`, 'late')).statusCode).toBe(410);
    // A link to another question of the same attempt (one no longer asked): closed.
    const other = { ...claim, questionKey: 'an-earlier-question', expiresAtMs: Date.now() + 60_000 };
    expect((await answerVia(`/answer/${signAnswerLink(LINKS.secret, other)}`, 'stale')).statusCode).toBe(409);
    // Signed with another secret.
    expect((await answerVia(`/answer/${signAnswerLink('another-secret-of-at-least-32-characters', { ...claim, expiresAtMs: Date.now() + 60_000 })}`, 'forged')).statusCode).toBe(401);
    const token = link.path.slice('/answer/'.length);
    const flipped = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    expect((await answerVia(`/answer/${flipped}`, 'tampered')).statusCode).toBe(401);
    expect(answersSeen('late') + answersSeen('stale') + answersSeen('forged') + answersSeen('tampered')).toBe(0);

    // Once the workflow is canceled, the question is closed.
    expect((await authorized(app, { method: 'POST', url: '/v1/workflows/link-refusals/cancel' })).statusCode).toBeLessThan(300);
    await eventually(async () => (await fleet.context.journal.getDelegation({ workflowId: 'link-refusals', delegationId: 'main.1' }))?.state === 'CANCELED', 'attempt canceled');
    expect((await answerVia(link.path, 'after cancel')).statusCode).toBe(409);
    expect(answersSeen('after cancel')).toBe(0);
  });

  it('property: any change to a valid link is refused (401), never answered', async () => {
    const link = await openQuestion('link-property');
    const token = link.path.slice('/answer/'.length);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('replace' as const), at: fc.nat({ max: token.length - 1 }), char: fc.constantFrom(...alphabet) }),
      fc.record({ kind: fc.constant('cut' as const), at: fc.nat({ max: token.length - 1 }) }),
      fc.record({ kind: fc.constant('append' as const), text: fc.string({ unit: fc.constantFrom(...alphabet), minLength: 1, maxLength: 8 }) }),
    );
    await fc.assert(
      fc.asyncProperty(mutation, async (change) => {
        const tampered =
          change.kind === 'replace' ? token.slice(0, change.at) + change.char + token.slice(change.at + 1) : change.kind === 'cut' ? token.slice(0, change.at) : token + change.text;
        fc.pre(tampered !== token);
        const response = await answerVia(`/answer/${encodeURIComponent(tampered)}`, 'tampered-property');
        expect(response.statusCode === 401 || response.statusCode === 404).toBe(true);
      }),
      { numRuns: 60 },
    );
    expect(answersSeen('tampered-property')).toBe(0);
    const record = await fleet.context.journal.getDelegation({ workflowId: 'link-property', delegationId: 'main.1' });
    expect(record?.replyMessageId).toBeUndefined();
  });
});
