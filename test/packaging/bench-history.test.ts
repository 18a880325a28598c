/**
 * The benchmarks' history fill (bench/history.ts) writes what a real finished workflow writes: a clone reads back
 * through the producer as the template does (its own ids), is found by the search index (metadata and id prefix)
 * and the listing by state, its keys have the template's types, sizes and TTLs, and nothing enters the unfinished index.
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createProducer } from '@durable-a2a/producer';
import { journalKeys } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { useDemoAgent } from '../harness/agent.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { startTestFleet } from '../harness/fleet.ts';
import { cloneFinishedWorkflow, variant } from '../../bench/history.ts';

const redisServer = useRedisServer();
const agent = useDemoAgent({ behaviour: completesWith('a finished job') });

describe('bench history fill', () => {
  it('clones a finished workflow faithfully: the producer reads each clone, the search finds it, its keys match the template', async () => {
    const prefix = 'bench-history';
    const keys = journalKeys(prefix);
    const redis = new Redis(redisServer().url);
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    try {
      const { id } = await producer.delegate({ agent: agent().cardUrl, text: 'a finished job', metadata: { order: 'o-1' } });
      const template = await producer.waitFor(id, { timeoutMs: 30_000 });
      expect(template.state).toBe('COMPLETED');
      await fleet.close();
      const unfinished = await redis.zcard(keys.unfinished());
      const progress: number[] = [];
      await cloneFinishedWorkflow(redis, prefix, id, 2_500, { onProgress: (written) => progress.push(written) });
      expect(progress.at(-1)).toBe(2_500);
      expect(await redis.zcard(keys.unfinished())).toBe(unfinished);

      for (const index of [0, 1_234, 2_499]) {
        const cloneId = variant(id, index);
        expect(cloneId).toHaveLength(id.length);
        const clone = await producer.get(cloneId);
        const [original, copied] = [template.steps[0]!.attempts[0]!, clone.steps[0]!.attempts[0]!];
        expect(clone.state).toBe('COMPLETED');
        expect(copied.state).toBe(original.state);
        expect(copied.taskId).toBe(variant(original.taskId!, index));
        expect(copied.messageId).toBe(variant(original.messageId, index));
        expect(copied.contextId).toBe(variant(original.contextId!, index));
        expect(JSON.stringify(clone).length).toBe(JSON.stringify(template).length);
        for (const key of [keys.finished(id), keys.taskOwner(original.agentCardUrl, original.taskId!)]) {
          const clonedKey = key === keys.finished(id) ? keys.finished(cloneId) : keys.taskOwner(original.agentCardUrl, variant(original.taskId!, index));
          expect(await redis.type(clonedKey)).toBe(await redis.type(key));
          expect(await redis.strlen(clonedKey)).toBe(await redis.strlen(key));
          expect(Math.abs((await redis.pttl(clonedKey)) - (await redis.pttl(key)))).toBeLessThan(60_000);
        }
        expect(await redis.get(keys.taskOwner(original.agentCardUrl, variant(original.taskId!, index)))).toBe(`${cloneId}|${original.delegationId}`);
        expect(await redis.zscore(keys.updated(), cloneId)).not.toBeNull();
      }
      const found = await producer.search({ metadata: { order: 'o-1' } }, { limit: 500 });
      expect(found.items.length).toBe(500);
      expect((await producer.search({ idPrefix: variant(id, 1_234) })).items.map((item) => item.workflowId)).toEqual([variant(id, 1_234)]);
      // The listing by state reads the updated index: 500 of the 2,501 finished workflows on one page.
      expect((await producer.search({ state: 'COMPLETED' }, { limit: 500 })).items).toHaveLength(500);
    } finally {
      await fleet.close();
      await producer.close();
      redis.disconnect();
    }
  }, 120_000);
});
