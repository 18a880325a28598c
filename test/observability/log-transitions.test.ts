/**
 * Logs (docs/observability.md "Logs and metrics"): one info line per transition that matters, nothing per poll. A question parked for
 * several polls is logged "parked on a question" once; the start-up sweep logs its count once; a close logs
 * "fleet closed". A `waitFor` that times out on it says what it waited for and that the workflow waits for an answer.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { captureLogs } from '../harness/log-capture.ts';

const redisServer = useRedisServer();
const PREFIX = 'log-lines';
const PARKED_POLL_MS = 300;
const POLLS = 4;
let agent: DemoAgentHandle;
let producer: Producer;
let fleet: Fleet;
const logs = captureLogs({ level: 'info' });
const logged = (message: string) => logs.withMessage(message).length;

beforeAll(async () => {
  agent = await startDemoAgent({ behaviour: asksForInput('which date?', () => completionSteps('booked')) });
  producer = createProducer({ redis: redisServer().url, prefix: PREFIX, addressPolicy: { allowLoopback: true } });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX, parkedPollMs: PARKED_POLL_MS, reconcileIntervalMs: PARKED_POLL_MS, logger: logs.logger });
}, 60_000);
afterAll(async () => {
  await producer?.close();
  await fleet?.close();
  await agent?.close();
});

it('a question open over several polls is logged once; the start-up sweep once; a close once', async () => {
  await eventually(async () => logged('start-up sweep: every unfinished delegation and workflow enqueued for a check') === 1, 'the start-up sweep line', 10_000);
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book it' });
  await producer.waitFor(id, { untilQuestion: true, timeoutMs: 30_000 });
  // Several parked polls: each re-reads the task with GetTask.
  const reads = agent.requestCount('GetTask');
  await eventually(async () => agent.requestCount('GetTask') >= reads + POLLS, `${POLLS} parked polls`, 30_000);
  expect(logged('parked on a question')).toBe(1);
  // Finding 7 (waitFor): a timeout names what it waited for and why the workflow is not there.
  await expect(producer.waitFor(id, { timeoutMs: 200 })).rejects.toMatchObject({
    code: 'WAIT_TIMEOUT',
    message: `waited 200 ms for workflow ${id} to finish or need a person; it is RUNNING, waiting for an answer to its question (reply, or waitFor with untilQuestion)`,
  });
  await producer.reply(id, 'tomorrow');
  expect((await producer.waitFor(id, { timeoutMs: 30_000 })).state).toBe('COMPLETED');
  expect(logged('parked on a question')).toBe(1);
  expect(logged('start-up sweep: every unfinished delegation and workflow enqueued for a check')).toBe(1);
  await fleet.close();
  expect(logged('fleet closed')).toBe(1);
}, 90_000);
