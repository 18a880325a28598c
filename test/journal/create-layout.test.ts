/**
 * createWorkflow-11.lua's rows in their fixed layout (create-layout.ts): the names are the script's constants, so the
 * layout and what the callers build must not drift apart, and either form writes the same hash, field order included.
 * Real redis-server, the real create script.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildIntent, Journal } from '@durable-a2a/shared';
import { INTENT_ROW_LAYOUT, rowArguments, WORKFLOW_ROW_LAYOUT } from '../../packages/shared/src/journal/create-layout.ts';
import { testsOnCluster, useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let counter = 0;

describe('the created rows\' fixed layout', () => {
  it('is what the producer builds: a first intent\'s fields, then its tenant; a workflow\'s, then id, tenant and version', () => {
    const intent = buildIntent({ workflowId: 'w', step: 's', attempt: 1, agentCardUrl: 'http://a/card', message: { parts: [{ text: 'x' }] } as never, now: 1 });
    expect([...Object.keys(intent), 'tenant']).toEqual([...INTENT_ROW_LAYOUT]);
    // createWorkflowPlaced: `{ ...fields, workflowId, tenant, version, updatedAt }` over the producer's create fields.
    const fields = { state: 'RUNNING', definition: '{}', createdAt: '1', updatedAt: '1' };
    expect(Object.keys({ ...fields, workflowId: 'w', tenant: 'default', version: '1', updatedAt: '1' })).toEqual([...WORKFLOW_ROW_LAYOUT]);
  });

  it('rowArguments: the layout\'s values then the other pairs, or all pairs; read back as the script reads them, the same pairs', () => {
    const name = fc.oneof(fc.constantFrom(...INTENT_ROW_LAYOUT), fc.string({ minLength: 1, maxLength: 6 }));
    const withLayout = fc.array(fc.tuple(name, fc.string()), { maxLength: 6 }).chain((rest) =>
      fc.array(fc.string(), { minLength: INTENT_ROW_LAYOUT.length, maxLength: INTENT_ROW_LAYOUT.length }).map((values) => [...INTENT_ROW_LAYOUT.map((field, index) => [field, values[index]!] as [string, string]), ...rest]),
    );
    fc.assert(
      fc.property(fc.oneof(withLayout, fc.array(fc.tuple(name, fc.string()), { maxLength: 20 })), (pairs) => {
        const { count, values } = rowArguments(INTENT_ROW_LAYOUT, pairs);
        const fixed = pairs.length >= INTENT_ROW_LAYOUT.length && INTENT_ROW_LAYOUT.every((field, index) => pairs[index]![0] === field);
        expect(count < 0).toBe(fixed);
        // createWorkflow-11.lua: the layout's names with its values, then the pairs after them.
        const read = count < 0 ? [...INTENT_ROW_LAYOUT.flatMap((field, index) => [field, values[index]!]), ...values.slice(INTENT_ROW_LAYOUT.length)] : values;
        expect(read.length).toBe(count < 0 ? INTENT_ROW_LAYOUT.length * 2 - 2 - 2 * count : 2 * count);
        expect(read).toEqual(pairs.flat());
      }),
    );
  });

  it('a created row holds its fields in the order given, with or without extra fields, in either form (property)', async () => {
    const extra = fc.uniqueArray(fc.tuple(fc.constantFrom('held', 'priority', 'push', 'pushToken', 'note', 'x1'), fc.string({ maxLength: 8 })), { selector: ([field]) => field, maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(extra, extra, fc.boolean(), fc.boolean(), async (workflowExtra, intentExtra, shuffled, intentShuffled) => {
        const journal = new Journal(redis(), { prefix: `cl${++counter}`, retentionMs: 60_000 });
        const workflowId = `wf-${counter}`;
        const base = { state: 'RUNNING', definition: '{"steps":[]}', createdAt: '5', updatedAt: '7' };
        const fields: Record<string, string> = Object.fromEntries([...(shuffled ? [['definition', base.definition]] : []), ...Object.entries(base), ...workflowExtra]);
        const built = buildIntent({ workflowId, step: 'main', attempt: 1, agentCardUrl: 'http://a/card', message: { parts: [{ text: 'x' }] } as never, now: 5 });
        const intent = { ...(intentShuffled ? { note: 'first' } : {}), ...built, ...Object.fromEntries(intentExtra) };
        expect(await journal.createWorkflow(workflowId, fields, intent)).toBe(true);
        const workflowRow = await redis().call('HGETALL', journal.keys.workflow(workflowId));
        expect(workflowRow).toEqual(Object.entries({ ...fields, workflowId, tenant: 'default', version: '1', updatedAt: '7' }).flat());
        const intentRowStored = await redis().call('HGETALL', journal.keys.delegation(workflowId, 'main.1'));
        expect(intentRowStored).toEqual(Object.entries({ ...intent, tenant: 'default' }).flat());
        // The first delegation listed, the workflow scored by its updatedAt in the updated index, in either form.
        expect(await redis().lrange(journal.keys.delegationList(workflowId), 0, -1)).toEqual(['main.1']);
        expect(await redis().zscore(journal.keys.updated(), workflowId)).toBe('7');
      }),
      { numRuns: 40 },
    );
  });

  it.skipIf(testsOnCluster())('the producer-shaped create sends no field name of the layout (one server)', async () => {
    const journal = new Journal(redis(), { prefix: `cl${++counter}`, retentionMs: 60_000 });
    const workflowId = `wf-${counter}`;
    const intent = buildIntent({ workflowId, step: 'main', attempt: 1, agentCardUrl: 'http://a/card', message: { parts: [{ text: 'x' }] } as never, now: 5 });
    await redis().config('SET', 'slowlog-log-slower-than', '0');
    await redis().slowlog('RESET');
    try {
      await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: '{}', createdAt: '5', updatedAt: '5' }, intent, 10);
    } finally {
      await redis().config('SET', 'slowlog-log-slower-than', '10000');
    }
    const entries = (await redis().call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[]][];
    const create = entries.find(([, , , args]) => args[0]?.toLowerCase() === 'evalsha');
    // SLOWLOG keeps 31 arguments and counts the rest in its last.
    const args = create![3];
    const total = 31 + Number(/\.\.\. \((\d+) more arguments\)/.exec(args[args.length - 1]!)?.[1] ?? '0');
    // EVALSHA, digest, key count, 11 keys, 12 heads, 7 + 15 values, 2 unfinished entries (4), 1 search member (2).
    expect(total).toBe(3 + 11 + 12 + 7 + 15 + 4 + 2);
    expect(args.slice(3 + 11, 3 + 11 + 2)).toEqual(['-1', '-1']);
  });
});
