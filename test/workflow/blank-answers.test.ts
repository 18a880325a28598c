/**
 * Blank answers are refused (field report: "Table booked for    " reached an agent): an answer of whitespace alone,
 * or with an empty part, is a 400 INVALID_INPUT from the API, a ProducerInputError from `producer.reply`, and a
 * visible message on /ui's form post; nothing is journaled and the question stays open for a real answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ApiServer } from '@durable-a2a/producer/server';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { authorized, startTestServer } from '../harness/api-server.ts';

const redisServer = useRedisServer();
const PREFIX = 'blank';
const ID = 'table-1';
let app: ApiServer;
let fleet: Fleet;
let producer: Producer;
let agent: DemoAgentHandle;

beforeAll(async () => {
  agent = await startDemoAgent({ behaviour: asksForInput('a table for how many?', (answer) => completionSteps(`Table booked for ${answer}`)) });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
  await app.ready();
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: PREFIX });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
  await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: ID });
  await eventually(async () => (await producer.questions(ID)).length === 1, 'the question is open');
});
afterAll(async () => {
  await fleet?.close();
  await producer?.close();
  await app?.close();
  await agent?.close();
});

/** Whitespace of every kind JavaScript's trim() removes: spaces, tabs, line breaks, no-break and em spaces, BOM. */
const blank = fc.string({ unit: fc.constantFrom(' ', '\t', '\n', '\r', '\v', '\f', '\u00a0', '\u2003', '\u3000', '\ufeff'), minLength: 1, maxLength: 40 });

describe('blank answers', () => {
  it('property: whitespace alone (text, or a text part among others) is refused by the API, the producer and /ui; nothing journaled', async () => {
    await fc.assert(
      fc.asyncProperty(blank, async (text) => {
        const api = await authorized(app, { method: 'POST', url: `/v1/workflows/${ID}/steps/main/reply`, payload: { text } });
        expect(api.statusCode).toBe(400);
        expect(api.json()).toMatchObject({ code: 'INVALID_INPUT', field: 'text' });
        const parts = await authorized(app, { method: 'POST', url: `/v1/workflows/${ID}/steps/main/reply`, payload: { parts: [{ text: 'four' }, { text }] } });
        expect(parts.statusCode).toBe(400);
        expect(parts.json()).toMatchObject({ code: 'INVALID_INPUT' });
        await expect(producer.reply(ID, text)).rejects.toMatchObject({ name: 'ProducerInputError', code: 'INVALID_INPUT' });
        await expect(producer.reply(ID, { parts: [{ text }] })).rejects.toMatchObject({ name: 'ProducerInputError', code: 'INVALID_INPUT' });
        const form = await authorized(app, { method: 'POST', url: `/ui/workflows/${ID}/steps/main/reply`, payload: new URLSearchParams({ text }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
        expect(form.statusCode).toBe(400);
        expect(form.headers['content-type']).toMatch(/^text\/html/);
        // The workflow page says why, visibly (the refused notice).
        expect(form.body).toMatch(/notice-refused"[^>]*>Refused: [^<]*blank answer/);
      }),
      { numRuns: 40 },
    );
    const row = await producer.journal.getDelegation({ workflowId: ID, delegationId: 'main.1' });
    expect(row?.replyMessageId).toBeUndefined();
    expect(await producer.questions(ID)).toHaveLength(1);
    expect(agent.receivedMessages.filter((message) => message.isFollowUp)).toEqual([]);
  });

  it('a real answer with spaces around it still goes through, once', async () => {
    const answer = await authorized(app, { method: 'POST', url: `/v1/workflows/${ID}/steps/main/reply`, payload: { text: '  four  ' } });
    expect(answer.statusCode).toBe(202);
    const view = await eventually(async () => {
      const current = await producer.get(ID);
      return current.state === 'COMPLETED' && current;
    }, 'completed');
    expect(view.steps[0]!.attempts[0]!.resultText).toBe('Table booked for   four  ');
    expect(agent.receivedMessages.filter((message) => message.isFollowUp)).toHaveLength(1);
  });
});
