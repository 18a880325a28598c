/**
 * CPU of the finished view `waitFor` returns, built from the message a real finish publishes (a one-step delegation
 * of the peers bench's agent, one artifact): µs a `workflowView` call, min of alternating batches.
 *
 *   pnpm tsx --conditions=@durable-a2a/source bench/finished-view.ts [batches, default 5] [calls a batch, default 50000]
 */
import { Redis } from 'ioredis';
import { createProducer, workflowView } from '@durable-a2a/producer';
import { Journal, workflowChangePattern } from '@durable-a2a/shared';
import { startRedisServer } from '../test/harness/redis.ts';
import { completesWith, startDemoAgent } from '@durable-a2a/testing';
import { startBenchFleet, stopAgent } from './common.ts';

const [batchesText = '5', callsText = '50000'] = process.argv.slice(2);
const prefix = 'fv';
const redisServer = await startRedisServer();
const agent = await startDemoAgent({ behaviour: completesWith('the result of the delegation', { delayMs: 0 }) });
const journal = new Journal(new Redis(redisServer.url), { prefix });
const listener = new Redis(redisServer.url);
const producer = createProducer({ redis: redisServer.url, addressPolicy: { allowLoopback: true }, prefix });
const fleet = await startBenchFleet({ redisUrl: redisServer.url, prefix, concurrency: { send: 5, follow: 5 }, subscribeRateLimit: { max: 1_000_000, durationMs: 1_000 } });
try {
  const messages: string[] = [];
  listener.on('pmessage', (_pattern: string, _channel: string, message: string) => messages.push(message));
  await listener.psubscribe(workflowChangePattern(journal));
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'fv-1', idempotencyKey: 'fv-1' });
  await producer.waitFor(id, { timeoutMs: 20_000 });
  for (let tries = 0; tries < 100 && !messages.some((message) => message.startsWith('{')); tries++) await new Promise((resolve) => setTimeout(resolve, 50));
  const published = messages.find((message) => message.startsWith('{'));
  if (!published) throw new Error(`no compacted record published: ${messages.join(' | ')}`);
  console.log(`published record: ${published.length} characters`);
  const now = Date.now();
  let best = Infinity;
  for (let batch = 0; batch < Number(batchesText); batch++) {
    const started = process.cpuUsage();
    for (let call = 0; call < Number(callsText); call++) await workflowView(journal, id, published, now);
    const used = process.cpuUsage(started);
    const perCall = (used.user + used.system) / Number(callsText);
    best = Math.min(best, perCall);
    console.log(`batch ${batch + 1}: ${perCall.toFixed(2)} µs a call`);
  }
  console.log(`min ${best.toFixed(2)} µs a call`);
} finally {
  await fleet.close();
  await producer.close();
  listener.disconnect();
  journal.redis.disconnect();
  await stopAgent(agent);
  await redisServer.stop();
}
