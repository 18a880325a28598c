/**
 * The unfinished index in its skiplist form (createWorkflow-11.lua, branch redis36): the create adds a member longer
 * than zset-max-listpack-value with its entries and removes it in the same script, so Redis keeps the index as a
 * skiplist (a listpack of ~100 entries costs every ZADD and ZREM a scan of it). The index's members are exactly the
 * workflows' entries, the long member never among them. Real redis-server, the real create script.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildIntent, indexMember, Journal } from '@durable-a2a/shared';
import { testsOnCluster, useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let counter = 0;

/** Creates workflow `workflowId` with its first intent through the journal's create (the producer's path). */
async function create(journal: Journal, workflowId: string): Promise<boolean> {
  const fields = { state: 'RUNNING', definition: '{"steps":[]}', createdAt: '5', updatedAt: '7' };
  const intent = buildIntent({ workflowId, step: 'main', attempt: 1, agentCardUrl: 'http://a/card', message: { parts: [{ text: 'x' }] } as never, now: 5 });
  return journal.createWorkflow(workflowId, fields, intent);
}

describe.skipIf(testsOnCluster())('the unfinished index after a create (one server)', () => {
  it('is a skiplist from the first create on, and holds only the created entries', async () => {
    const journal = new Journal(redis(), { prefix: `us${++counter}`, retentionMs: 60_000 });
    expect(await create(journal, 'wf-a')).toBe(true);
    const key = journal.keys.unfinished();
    // Before this branch: 'listpack' (2 short members), and every later ZADD and ZREM scanned it.
    expect(await redis().call('OBJECT', 'ENCODING', key)).toBe('skiplist');
    expect(await redis().zrange(key, 0, -1)).toEqual(expect.arrayContaining([indexMember('wf-a', 'main.1')]));
    expect((await redis().zrange(key, 0, -1)).every((member) => member.includes('|'))).toBe(true);
    // A create that finds its workflow writes nothing, the index included.
    const before = await redis().zrange(key, 0, -1, 'WITHSCORES');
    expect(await create(journal, 'wf-a')).toBe(false);
    expect(await redis().zrange(key, 0, -1, 'WITHSCORES')).toEqual(before);
  });

  it('holds exactly the entries of the workflows created, whatever was removed between creates (property)', async () => {
    const step = fc.oneof(fc.record({ create: fc.integer({ min: 0, max: 40 }) }), fc.record({ remove: fc.integer({ min: 0, max: 40 }) }));
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 60 }), async (steps) => {
        const journal = new Journal(redis(), { prefix: `up${++counter}`, retentionMs: 60_000 });
        const key = journal.keys.unfinished();
        const expected = new Set<string>();
        const created = new Set<number>();
        for (const action of steps) {
          if ('create' in action) {
            const fresh = !created.has(action.create);
            expect(await create(journal, `wf-${action.create}`)).toBe(fresh);
            if (fresh) {
              created.add(action.create);
              // The create's own entry: its first delegation's (the journal's create names no `*` entry).
              expected.add(indexMember(`wf-${action.create}`, 'main.1'));
            }
          } else {
            // Another writer's removal (a finish): the set may empty and be deleted, the next create makes it again.
            const members = [...expected].filter((member) => member.startsWith(`wf-${action.remove}|`));
            if (members.length > 0) await redis().zrem(key, ...members);
            for (const member of members) expected.delete(member);
          }
          const members = await redis().zrange(key, 0, -1);
          expect(new Set(members)).toEqual(expected);
          expect(members.every((member) => member.includes('|'))).toBe(true);
          if (members.length > 0 && 'create' in action && created.has(action.create)) expect(await redis().call('OBJECT', 'ENCODING', key)).toBe('skiplist');
        }
      }),
      { numRuns: 25 },
    );
  });
});
