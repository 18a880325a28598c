/**
 * `pnpm example`: the producer API in one file. It starts what it needs
 * (a private redis-server unless REDIS_URL is set, two demo A2A agents and a
 * worker fleet in this process) so it runs as is; in your service you only
 * keep the producer part and run the workers separately.
 *
 * With REDIS_URL (your own Redis) each run uses a key prefix of its own,
 * `example-<8 hex>`: the ids below (`order-1001`, `trip-2001`) are then new on
 * every run although its agents listen on new ports (the same id with another
 * agent would be IdempotencyConflictError), and workers you run on that Redis
 * (prefix `da2a`) leave its jobs to the fleet it starts. Its finished records
 * expire after 7 days; about 25 small queue and index keys of the prefix stay
 * (`redis-cli --scan --pattern '*example-*'` lists them).
 */
import { randomUUID } from 'node:crypto';
import { createProducer } from '@durable-a2a/producer';
import { startFleet } from '@durable-a2a/workers';
import { createLogger } from '@durable-a2a/shared';
// The test kit: a private redis-server and scriptable A2A agents (use it in your own tests too).
import { asksForInput, completionSteps, quietSdkConsole, rejects, startDemoAgent, startRedisServer } from '@durable-a2a/testing';

quietSdkConsole();

const redisServer = process.env.REDIS_URL ? undefined : await startRedisServer({ appendOnly: true });
const redisUrl = process.env.REDIS_URL ?? redisServer!.url;
const prefix = process.env.REDIS_URL ? `example-${randomUUID().slice(0, 8)}` : undefined; // default 'da2a'
const skill = { id: 'book-hotel', name: 'Book a hotel', description: 'Books hotel rooms', tags: ['travel'] };
const strictHotel = await startDemoAgent({ name: 'Strict hotel', skills: [skill], behaviour: rejects('we only take bookings by phone') });
const friendlyHotel = await startDemoAgent({
  name: 'Friendly hotel',
  skills: [skill],
  behaviour: asksForInput('two rooms or one?', (answer) => completionSteps(`booked ${answer}`)),
});
const addressPolicy = { allowLoopback: true }; // the demo agents listen on 127.0.0.1
const fleet = await startFleet({ redis: redisUrl, prefix, addressPolicy, logger: createLogger({ level: 'warn' }) });

// --- what a service writes -------------------------------------------------
const producer = createProducer({ redis: redisUrl, prefix, addressPolicy }); // prefix: leave it out (the workers' default)

// 1. One delegation, idempotent on its key: calling it twice never sends twice.
const single = await producer.delegate({ agent: friendlyHotel.cardUrl, text: 'Book a room in Lisbon', idempotencyKey: 'order-1001' });
console.log('delegation', single.id, 'messageId', single.messageId);

// 2. A workflow: steps by skill, re-delegated across agents within a budget.
for (const agent of [strictHotel, friendlyHotel]) await producer.registerAgent(agent.cardUrl);
await producer.startWorkflow({
  workflowId: 'trip-2001',
  maxAttemptsPerStep: 3,
  steps: [{ name: 'hotel', skill: 'book-hotel', message: { text: 'Book a hotel in Porto' } }],
});

// 3. Questions are journaled; await one (no polling), answer it on the same task and context.
for (const id of [single.id, 'trip-2001']) {
  const { openQuestions: [question] } = await producer.waitFor(id, { untilQuestion: true, timeoutMs: 30_000 });
  if (question) {
    console.log(`${id}: the agent asks "${question.text}" on task ${question.taskId}`);
    await producer.reply(id, 'two', question.step);
  }
}
// 4. Await the result: resolves when the workflow is finished or needs a person.
for (const id of [single.id, 'trip-2001']) {
  const view = await producer.waitFor(id, { timeoutMs: 30_000 });
  for (const step of view.steps) {
    for (const attempt of step.attempts) {
      console.log(`${id} ${attempt.delegationId}: ${attempt.state} at ${attempt.agentCardUrl.split('/')[2]}${attempt.error ? ` (${attempt.error.message})` : ''}${attempt.resultText ? ` → ${attempt.resultText}` : ''}`);
    }
  }
  console.log(`${id}: ${view.state}`);
}
// ---------------------------------------------------------------------------

await producer.close();
await fleet.close();
await Promise.all([strictHotel.close(), friendlyHotel.close()]);
await redisServer?.stop();
