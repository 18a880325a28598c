/** Dumps one finished single-step workflow's journal keys: MEMORY USAGE, OBJECT ENCODING, fields. */
import { Redis } from 'ioredis';
import { createProducer } from '@durable-a2a/producer';
import { startRedisServer } from '../test/harness/redis.ts';
import { startDemoAgent } from '../test/harness/agent.ts';
import type { Behaviour } from '../test/harness/agent-behaviours.ts';
import { sleep, startBenchFleet, stopAgent } from './common.ts';

const noArtifacts: Behaviour = () => [{ state: 'WORKING' }, { state: 'COMPLETED', text: 'done' }];
const prefix = 'fp';
const redisServer = await startRedisServer();
const agent = await startDemoAgent({ behaviour: noArtifacts });
const reader = new Redis(redisServer.url);
const producer = createProducer({ redis: redisServer.url, addressPolicy: { allowLoopback: true }, prefix });
const fleet = await startBenchFleet({ redisUrl: redisServer.url, prefix, concurrency: { send: 5, follow: 5 }, subscribeRateLimit: { max: 1_000_000, durationMs: 1_000 } });
try {
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'record 1', idempotencyKey: 'fp-1' });
  for (let i = 0; i < 200; i++) {
    if ((await reader.zcard(`${prefix}:unfinished`)) === 0) break;
    await sleep(50);
  }
  await sleep(300);
  let total = 0;
  for (const key of (await reader.keys(`${prefix}:{wf:${id}}:*`)).sort()) {
    const usage = Number(await reader.memory('USAGE', key, 'SAMPLES', 0));
    total += usage;
    const type = await reader.type(key);
    console.log(`${key} ${type} ${await reader.object('ENCODING', key)} ${usage} ttl=${await reader.pttl(key)}`);
    if (type === 'hash') console.log(await reader.hgetall(key));
    else if (type === 'string') console.log(await reader.get(key));
    else if (type === 'list') console.log(await reader.lrange(key, 0, -1));
  }
  console.log('total', total);
  console.log(JSON.stringify(await producer.get(id), null, 1).slice(0, 3000));
} finally {
  await fleet.close();
  await producer.close();
  reader.disconnect();
  await stopAgent(agent);
  await redisServer.stop();
}
