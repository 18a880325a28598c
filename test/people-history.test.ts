/**
 * The history people read (docs/people.md "History"), end to end with a real fleet, real agents and the HTTP service with
 * named API tokens: the question and its answer stay in the record after the workflow finished (API view, CLI
 * `show`, the /ui workflow page), with who answered and when; a cancel says who asked; a re-delegation its reason;
 * verifications their evidence; compensations their undo steps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import { createProducer, type HistoryEntryView, type Producer, type WorkflowView } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { run } from '@durable-a2a/cli';
import { useRedisServer } from './harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from './harness/agent.ts';
import { asksForInput, completionSteps } from './harness/agent-behaviours.ts';
import { eventually, startTestFleet } from './harness/fleet.ts';
import { signIn, startTestServer } from './harness/api-server.ts';
import { bookingVerifier, startTravelCast, travelWorkflow, type TravelCast } from './harness/travel.ts';

const redisServer = useRedisServer();
const PREFIX = 'people-history';
const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef';
const QUESTION = 'How many people, and where would you like to sit?';
const ANSWER = 'six people, window seat if possible';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
let app: ApiServer;
let apiUrl: string;
let fleet: Fleet;
let asking: DemoAgentHandle;

beforeAll(async () => {
  asking = await startDemoAgent({ behaviour: asksForInput(QUESTION, (answer) => completionSteps(`Table booked for ${answer}`)) });
  app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX, apiTokens: [`ops-alice:${ALICE}`, `ops-bob:${BOB}`] });
  apiUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
});
afterAll(async () => {
  await fleet?.close();
  await app?.close();
  await asking?.close();
});

const call = (token: string, method: 'GET' | 'POST', url: string, payload?: object) =>
  app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
const viewOf = async (id: string) => (await call(ALICE, 'GET', `/v1/workflows/${id}`)).json<WorkflowView>();

async function delegateAndWaitForQuestion(key: string): Promise<string> {
  const started = await call(ALICE, 'POST', '/v1/delegations', { agent: asking.cardUrl, text: 'Book a table at Chez Nous tonight', idempotencyKey: key });
  expect(started.statusCode).toBe(201);
  const { id } = started.json<{ id: string }>();
  await eventually(async () => (await viewOf(id)).openQuestions.length === 1, `${id} asks`);
  return id;
}

describe('N32: the answer is in the record', () => {
  it('N32: answered through the API with a named token: after COMPLETED the API view, CLI show and /ui page show the question, the answer, who and when; the status message is not the question', async () => {
    const id = await delegateAndWaitForQuestion('n32');
    const before = Date.now();
    const replied = await call(ALICE, 'POST', `/v1/workflows/${id}/steps/main/reply`, { text: ANSWER });
    expect(replied.statusCode).toBe(202);
    await eventually(async () => (await viewOf(id)).state === 'COMPLETED', `${id} completed`);
    const view = await viewOf(id);

    const question = view.history.find((entry) => entry.kind === 'question')!;
    const answer = view.history.find((entry) => entry.kind === 'answer')!;
    expect(question).toMatchObject({ step: 'main', delegationId: 'main.1', state: 'INPUT_REQUIRED', text: QUESTION, request: { text: 'Book a table at Chez Nous tonight' } });
    expect(answer).toMatchObject({ step: 'main', delegationId: 'main.1', text: ANSWER, by: 'token ops-alice' });
    for (const entry of view.history) expect(entry.at).toMatch(ISO);
    expect(Date.parse(answer.at)).toBeGreaterThanOrEqual(before - 1_000);
    expect(Date.parse(answer.at)).toBeGreaterThanOrEqual(Date.parse(question.at));
    const attempt = view.steps[0]!.attempts[0]!;
    expect(attempt.state).toBe('COMPLETED');
    expect(JSON.stringify(attempt.statusMessage ?? null)).not.toContain(QUESTION);
    expect(attempt.question).toBeUndefined();

    let stdout = '';
    const code = await run(['show', id], { stdout: (text) => (stdout += text), stderr: () => undefined, env: { DURABLE_A2A_URL: apiUrl, DURABLE_A2A_TOKEN: BOB } });
    expect(code).toBe(0);
    expect(stdout).toContain(`${question.at}  main.1 asked (INPUT_REQUIRED): "${QUESTION}"`);
    expect(stdout).toContain(`${answer.at}  main.1 answered by token ops-alice: "${ANSWER}"`);
    expect(stdout).not.toMatch(/reply \S+ sent/);

    const page = await call(BOB, 'GET', `/ui/workflows/${id}`);
    expect(page.statusCode).toBe(200);
    const history = page.body.slice(page.body.indexOf('id="history-heading"'));
    expect(history).toContain(QUESTION);
    expect(history).toContain(ANSWER);
    expect(history).toContain('answered by token ops-alice');
    expect(history).toContain(`datetime="${answer.at}"`);
  });

  it('an answer from /ui with a session records the session and its token name', async () => {
    const id = await delegateAndWaitForQuestion('ui-session');
    const cookie = await signIn(app, BOB);
    const posted = await app.inject({ method: 'POST', url: `/ui/workflows/${id}/steps/main/reply`, payload: 'text=two+people', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' } });
    expect(posted.statusCode).toBe(303);
    await eventually(async () => (await viewOf(id)).state === 'COMPLETED', `${id} completed`);
    expect((await viewOf(id)).history.find((entry) => entry.kind === 'answer')).toMatchObject({ text: 'two people', by: 'session ops-bob' });
  });

  it('a cancel by a named token appears with who asked', async () => {
    const id = await delegateAndWaitForQuestion('cancel');
    expect((await call(BOB, 'POST', `/v1/workflows/${id}/cancel`)).statusCode).toBe(202);
    await eventually(async () => ['CANCELED', 'FAILED', 'COMPENSATED'].includes((await viewOf(id)).state), `${id} canceled`);
    const view = await viewOf(id);
    expect(view.history.map((entry) => entry.kind)).toEqual(['question', 'cancel']);
    expect(view.history[1]).toMatchObject({ by: 'token ops-bob', summary: 'cancel requested by token ops-bob' });
  });
});

describe('the travel saga keeps its story', () => {
  let cast: TravelCast;
  let producer: Producer;
  let sagaFleet: Fleet;
  beforeAll(async () => {
    cast = await startTravelCast();
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: 'people-saga' });
    for (const agent of [cast.flight, cast.hotel, cast.car1, cast.car2]) await producer.registerAgent(agent.cardUrl);
    sagaFleet = await startTestFleet({ redisUrl: redisServer().url, prefix: 'people-saga', verifiers: { booking: bookingVerifier(cast.bookings.url) } });
  });
  afterAll(async () => {
    await sagaFleet?.close();
    await producer?.close();
    await cast?.close();
  });

  it('the question and its answer, the re-delegation with its reason, verifications with evidence and the undo steps, in order', async () => {
    const { id } = await producer.startWorkflow(travelWorkflow('trip-history'));
    await eventually(async () => (await producer.questions(id)).length > 0, 'the hotel question');
    await producer.reply(id, 'two', 'hotel', { by: 'token ops-carol' });
    const view = await producer.waitFor(id, { timeoutMs: 30_000 });
    expect(view.state).toBe('COMPENSATED');
    const kinds = view.history.map((entry) => entry.kind);
    expect(kinds).toContain('question');
    expect(view.history.find((entry) => entry.kind === 'answer')).toMatchObject({ step: 'hotel', text: 'two', by: 'token ops-carol' });
    const redelegation = view.history.find((entry) => entry.kind === 'redelegation') as HistoryEntryView & { previous: { reason: string }[] };
    expect(redelegation).toMatchObject({ step: 'car', delegationId: 'car.2', agentCardUrl: cast.car2.cardUrl });
    expect(redelegation.previous[0]!.reason).toContain('no cars left at this location');
    const verifications = view.history.filter((entry) => entry.kind === 'verification');
    expect(verifications.map((entry) => [entry.step, entry.effect])).toEqual(expect.arrayContaining([['flight', 'present'], ['hotel', 'present'], ['hotel', 'absent'], ['flight', 'absent']]));
    for (const verification of verifications) expect(verification.evidence).toBeDefined();
    const undo = view.history.filter((entry) => entry.kind === 'compensation').map((entry) => entry.step);
    expect(undo).toEqual(['hotel', 'flight']);
    // In the order it happened: the answer before the re-delegation, the re-delegation before the undo steps.
    expect(kinds.indexOf('answer')).toBeLessThan(kinds.indexOf('redelegation'));
    expect(kinds.indexOf('redelegation')).toBeLessThan(kinds.indexOf('compensation'));
    const times = view.history.map((entry) => Date.parse(entry.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });
});
