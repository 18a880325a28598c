/**
 * F31 and its kind (Redis up but refusing writes): 30 delegations in flight on two workers, then
 * `CONFIG SET maxmemory` below the memory in use (noeviction). The API answers create, reply and cancel with
 * 503 `REDIS_REFUSING_WRITES` and Retry-After (never 500 INTERNAL), `/readyz` is 503 naming the kind, the
 * workers back off (the command rate Redis sees, counted with INFO commandstats over a window waited on by
 * events, stays within a bound per worker) and log the episode once; once memory is freed every delegation
 * completes, nothing is lost, and the agent saw one SendMessage per messageId.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { Fleet } from '@durable-a2a/workers';
import { redisErrorKind } from '@durable-a2a/shared';
import type { ApiServer } from '@durable-a2a/producer/server';
import { startRedisServer, testsOnCluster, type RedisServerHandle } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { asksForInput, completionSteps, runsSlowly, type AgentRequest } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { authorized, startTestServer } from '../harness/api-server.ts';
import { captureLogs, type LogCapture } from '../harness/log-capture.ts';

const PREFIX = 'refusing';
const IN_FLIGHT = 30;
/** Generous: without backoff two workers sent ~4,100 refused commands per second; with it, tens. */
const COMMANDS_PER_SECOND_PER_WORKER = 300;
let redis: RedisServerHandle;
let admin: Redis;
let agent: DemoAgentHandle;
let app: ApiServer;
const fleets: Fleet[] = [];
/** Each worker's own lines (its root logger's, not its jobs' child loggers'): the episode lines are the root's. */
const logs: LogCapture[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
  admin = new Redis(redis.url);
  // "ask" asks a question (the reply route has something to answer), "long" runs until canceled (the cancel
  // route has something to cancel); the rest work for a while (into the refusal), then complete.
  const behaviours: Record<string, (request: AgentRequest) => ReturnType<ReturnType<typeof runsSlowly>>> = {
    ask: asksForInput('which room?', () => completionSteps('booked')),
    long: runsSlowly(120_000),
  };
  agent = await startDemoAgent({ behaviour: (request: AgentRequest) => (behaviours[request.text] ?? runsSlowly(4_000))(request) });
  for (const index of [0, 1]) {
    logs.push(captureLogs({ level: 'info', source: 'root calls' }));
    fleets.push(await startTestFleet({ redisUrl: redis.url, prefix: PREFIX, workerId: `worker-${index}`, logger: logs[index]!.logger }));
  }
  app = startTestServer({ redisUrl: redis.url, prefix: PREFIX });
  await app.ready();
}, 60_000);
afterAll(async () => {
  await admin?.config('SET', 'maxmemory', '0').catch(() => undefined);
  await app?.close();
  for (const fleet of fleets) await fleet.close();
  admin?.disconnect();
  await agent?.close();
  await redis?.stop();
});

const post = (url: string, payload?: unknown) => authorized(app, { method: 'POST', url, ...(payload ? { payload: payload as Record<string, unknown> } : {}) });
const viewOf = async (id: string) => (await authorized(app, { method: 'GET', url: `/v1/workflows/${id}` })).json<{ state?: string; openQuestions?: unknown[] }>();
const stateOf = async (id: string) => (await viewOf(id)).state;
const delegation = (key: string, text = 'work') => ({ agent: agent.cardUrl, text, idempotencyKey: key });
const refusals = async (fleet: Fleet) => ((await fleet.metrics.redisRefusals.get()).values as { value: number }[]).reduce((sum, value) => sum + value.value, 0);

/** Commands Redis ran or rejected so far (INFO commandstats `calls` + `rejected_calls`), the test's own INFO/CONFIG aside. */
async function commandsSoFar(): Promise<number> {
  const text = await admin.info('commandstats');
  let total = 0;
  for (const [, name, calls, rejected] of text.matchAll(/^cmdstat_([^:]+):calls=(\d+).*?rejected_calls=(\d+)/gm)) {
    if (name === undefined || name === 'info' || name.startsWith('config')) continue;
    total += Number(calls) + Number(rejected);
  }
  return total;
}

it.skipIf(testsOnCluster())('F31: Redis at maxmemory (noeviction): 503 with code and Retry-After, /readyz 503, workers back off, nothing lost once memory is freed', async () => {
  const ids = Array.from({ length: IN_FLIGHT }, (_, index) => `inflight-${index}`);
  for (const id of ids) expect((await post('/v1/delegations', delegation(id, ({ 'inflight-0': 'ask', 'inflight-1': 'long' } as Record<string, string>)[id] ?? 'work'))).statusCode).toBe(201);
  await eventually(async () => agent.receivedMessages.length >= IN_FLIGHT && ((await viewOf('inflight-0')).openQuestions?.length ?? 0) > 0, 'every delegation sent, the question open', 40_000);

  const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
  await admin.config('SET', 'maxmemory', String(Math.floor(used / 2)));

  // The API: create, reply and cancel are refused with a code and Retry-After, never 500.
  const refused = [
    await post('/v1/delegations', delegation('during-refusal')),
    await post('/v1/workflows/inflight-0/steps/main/reply', { text: 'the blue one' }),
    await post('/v1/workflows/inflight-1/cancel'),
  ];
  for (const answer of refused) {
    expect(answer.statusCode, answer.body).toBe(503);
    expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(answer.headers['retry-after']).toMatch(/^\d+$/);
    expect(answer.json()).toMatchObject({ status: 503, code: 'REDIS_REFUSING_WRITES' });
  }
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  expect(ready.statusCode).toBe(503);
  expect(ready.json()).toMatchObject({ ready: false, redis: false, redisKind: 'refusing-writes' });

  // The workers: both are refused, then the rate Redis sees is counted over a window that ends on events.
  await eventually(async () => (await refusals(fleets[0]!)) > 0 && (await refusals(fleets[1]!)) > 0, 'both workers refused', 20_000);
  const windowStart = { at: Date.now(), commands: await commandsSoFar(), refusals: await Promise.all(fleets.map(refusals)) };
  await eventually(
    async () => (await Promise.all(fleets.map(refusals))).every((count, index) => count >= windowStart.refusals[index]! + 10) && Date.now() - windowStart.at >= 3_000,
    'ten more refusals on each worker, and three seconds',
    60_000,
    200,
  );
  const elapsedSeconds = (Date.now() - windowStart.at) / 1000;
  const rate = ((await commandsSoFar()) - windowStart.commands) / elapsedSeconds;
  console.log(`F31: ${Math.round(rate)} commands/s from two refused workers over ${elapsedSeconds.toFixed(1)} s`);
  expect(rate).toBeLessThan(COMMANDS_PER_SECOND_PER_WORKER * fleets.length);
  for (const fleet of [0, 1]) expect(logs[fleet]!.lines.filter((line) => line.redis === 'refusing'), `worker ${fleet}: one line for the episode`).toHaveLength(1);

  // Memory freed: the refused calls succeed when retried, everything completes.
  await admin.config('SET', 'maxmemory', '0');
  await eventually(async () => (await app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200, '/readyz 200 again');
  expect((await post('/v1/delegations', delegation('during-refusal'))).statusCode).toBe(201);
  expect((await post('/v1/workflows/inflight-0/steps/main/reply', { text: 'the blue one' })).statusCode).toBe(202);
  expect((await post('/v1/workflows/inflight-1/cancel')).statusCode).toBe(202);
  const expected = (id: string) => (id === 'inflight-1' ? ['CANCELED'] : ['COMPLETED']);
  for (const id of [...ids, 'during-refusal']) {
    await eventually(async () => expected(id).includes((await stateOf(id)) ?? ''), `${id} finished`, 60_000, 200).catch(async (error: unknown) => {
      throw new Error(`${String(error)}: ${JSON.stringify(await viewOf(id)).slice(0, 1500)}`);
    });
  }
  for (const fleet of [0, 1]) {
    expect(logs[fleet]!.lines.filter((line) => line.redis === 'taking-commands'), `worker ${fleet}: recovered once`).toHaveLength(1);
    // Refusals are the episode's; what they caused (a job's lock not renewed in time) may be logged, a few lines at most.
    const errorLines = logs[fleet]!.withMessage(/worker error|queue error|job failed/);
    expect(errorLines.filter((line) => redisErrorKind(line.err ?? new Error(String(line.reason ?? ''))) !== 'other'), `worker ${fleet}: no line per refused command`).toEqual([]);
    expect(errorLines.length, `worker ${fleet}: ${JSON.stringify(errorLines).slice(0, 500)}`).toBeLessThan(20);
  }
  // One SendMessage per messageId (the reply is its own message on the same task).
  const messageIds = agent.receivedMessages.map((message) => message.messageId);
  expect(new Set(messageIds).size).toBe(messageIds.length);
  expect(messageIds.length).toBe(IN_FLIGHT + 2);
}, 240_000);
