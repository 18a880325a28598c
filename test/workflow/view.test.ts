/**
 * The view says why (docs/http-api.md "The workflow view") and shows the answer (V3): per attempt the
 * progress state, the number of tries, the last classified error and the next
 * check time; a COMPLETED task with no artifacts shows its final status
 * message as the result.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps, fails, runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const prefix = 'view';
let producer: Producer;
let fleet: Fleet;
const agents: Record<string, DemoAgentHandle> = {};

beforeAll(async () => {
  agents.statusOnly = await startDemoAgent({ behaviour: () => [{ state: 'WORKING' }, { state: 'COMPLETED', text: 'Volt echo: hello' }] });
  agents.asking = await startDemoAgent({ behaviour: asksForInput('Which city?', (answer) => completionSteps(`booked ${answer}`)) });
  agents.failing = await startDemoAgent({ behaviour: fails('no rooms left') });
  agents.slow = await startDemoAgent({ behaviour: runsSlowly(8_000) });
  producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
});
afterAll(async () => {
  await fleet?.close();
  await producer?.close();
  for (const agent of Object.values(agents)) await agent.close();
});

const attemptOf = async (id: string) => (await producer.get(id)).steps[0]!.attempts[0]!;

it('V3: a COMPLETED task without artifacts shows its final status message as the result', async () => {
  const { id } = await producer.delegate({ agent: agents.statusOnly!.cardUrl, text: 'hello', idempotencyKey: 'v3' });
  await eventually(async () => (await producer.get(id)).state === 'COMPLETED', 'completed');
  const attempt = await attemptOf(id);
  expect(attempt.resultText).toBe('Volt echo: hello');
  expect(attempt).toMatchObject({ progress: 'finished', tries: 1 });
  expect(attempt.nextCheckAt).toBeUndefined();
});

it('an open question: waiting for a person, one try, a next check time', async () => {
  const { id } = await producer.delegate({ agent: agents.asking!.cardUrl, text: 'book', idempotencyKey: 'asking' });
  await eventually(async () => (await producer.get(id)).openQuestions.length === 1, 'question open');
  const attempt = await attemptOf(id);
  expect(attempt).toMatchObject({ progress: 'waiting for a person', tries: 1, state: 'INPUT_REQUIRED' });
  expect(Date.parse(attempt.nextCheckAt!)).toBeGreaterThan(Date.now() - 60_000);
});

it('a failed attempt shows its classified error', async () => {
  const { id } = await producer.delegate({ agent: agents.failing!.cardUrl, text: 'book', idempotencyKey: 'failing' });
  await eventually(async () => ['FAILED', 'NEEDS_ATTENTION'].includes((await producer.get(id)).state), 'failed');
  const attempt = await attemptOf(id);
  expect(attempt.progress).toBe('finished');
  expect(attempt.lastError).toMatchObject({ code: expect.any(String), message: expect.stringContaining('no rooms left') });
});

it('a running task is followed or polled, with a next check time', async () => {
  const { id } = await producer.delegate({ agent: agents.slow!.cardUrl, text: 'slow', idempotencyKey: 'slow' });
  const attempt = await eventually(async () => {
    const current = await attemptOf(id);
    return current.taskId && ['following', 'polling'].includes(current.progress) ? current : undefined;
  }, 'running');
  expect(attempt.tries).toBe(1);
  expect(attempt.nextCheckAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  expect(attempt.lastError).toBeUndefined();
});
