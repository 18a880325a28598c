/**
 * A producer process of one checkout for `bench/producer-ab.ts`: argv `<checkout root> <redis URL> [source|built]`
 * (`built`: the checkout's `packages/producer/dist/index.js`, run with plain node and no source conditions, as a
 * deployed service loads it; default `source`: its `src/index.ts`, through tsx with the source conditions). On
 * `{ count, concurrency, tag, cardUrl }` over IPC it runs `count` delegations (`delegate()` then `waitFor()`),
 * `concurrency` at once, and answers `{ cpuMicros, completed, elapsedMs }`: its own CPU (user + system,
 * `process.cpuUsage`, µs) over the batch. Says `{ ready: true }` once its producer exists.
 */
const [root, redisUrl, loaded = 'source'] = process.argv.slice(2);
if (!root || !redisUrl || !['source', 'built'].includes(loaded)) throw new Error('usage: producer-batch.ts <checkout root> <redis URL> [source|built]');
const entry = loaded === 'built' ? 'dist/index.js' : 'src/index.ts';
const { createProducer } = (await import(`${root}/packages/producer/${entry}`)) as typeof import('@durable-a2a/producer');
const producer = createProducer({ redis: redisUrl, addressPolicy: { allowLoopback: true }, prefix: 'ab' });

interface Batch {
  count: number;
  concurrency: number;
  tag: string;
  cardUrl: string;
}

process.on('message', async ({ count, concurrency, tag, cardUrl }: Batch) => {
  const started = process.cpuUsage();
  const startedAt = Date.now();
  let next = 0;
  let completed = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const key = `${tag}-${next++}`;
        const { id } = await producer.delegate({ agent: cardUrl, text: key, idempotencyKey: key });
        if ((await producer.waitFor(id, { timeoutMs: 600_000 })).state === 'COMPLETED') completed++;
      }
    }),
  );
  const used = process.cpuUsage(started);
  process.send!({ cpuMicros: used.user + used.system, completed, elapsedMs: Date.now() - startedAt });
});
process.send!({ ready: true });
