/**
 * The two readings of a row's suspect evidence, `keepsSuspects` and `suspectsPending`: written once for TypeScript
 * (journal/suspects.ts, used by every TypeScript caller and by `Journal.keepSuspects`) and once for Lua
 * (lua/includes/suspects.lua, included by renewFollow-2.lua and finishStep-5.lua). They agree on every combination of
 * the two fields: `suspects` absent, empty or any text; `suspectsLost` absent, empty, or any integer text (only
 * HINCRBY writes it: noteSuspect-1.lua, clearSuspects-1.lua).
 */
import { readFileSync } from 'node:fs';
import { beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Journal, keepsSuspects, suspectsPending, type DelegationRef } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let journal: Journal;
let counter = 0;
let ref: DelegationRef;

const INCLUDE = readFileSync(new URL('../../packages/shared/src/journal/lua/includes/suspects.lua', import.meta.url), 'utf8');
/** The include alone, on the row's two fields as HMGET gives them: {keeps, pending}. */
const BOTH = `${INCLUDE}\nlocal f = redis.call('HMGET', KEYS[1], 'suspects', 'suspectsLost')\nreturn {keepsSuspects(f[1], f[2]) and 1 or 0, suspectsPending(f[1]) and 1 or 0}`;

beforeEach(async () => {
  journal = new Journal(redis(), { prefix: `susp${++counter}`, retentionMs: 60_000 });
  ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
  expect(await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId))).toBe(true);
});

const row = () => journal.keys.delegation(ref.workflowId, ref.delegationId);

/** Writes (or removes, `undefined`) the two fields of the row. */
async function setFields(suspects: string | undefined, suspectsLost: string | undefined): Promise<void> {
  for (const [field, value] of [['suspects', suspects], ['suspectsLost', suspectsLost]] as const) {
    if (value === undefined) await redis().hdel(row(), field);
    else await redis().hset(row(), field, value);
  }
}

/** Every reading of the row as it stands: the TypeScript ones on the parsed record and by HMGET, the Lua ones. */
async function readings() {
  const record = (await journal.getDelegation(ref))!;
  const [luaKeeps, luaPending] = (await redis().eval(BOTH, 1, row())) as [number, number];
  const [renewal] = await journal.renewLeases([{ ref, token: 'holder' }], 60_000, () => Date.now() + 60_000);
  return {
    keeps: [keepsSuspects(record), (await journal.keepSuspects([ref]))[0], luaKeeps === 1, renewal!.keepsSuspects],
    pending: [suspectsPending(record), luaPending === 1],
  };
}

const suspectsField = fc.oneof(fc.constant(undefined), fc.constant(''), fc.constant('["T1"]'), fc.string({ maxLength: 40 }));
const lostField = fc.oneof(fc.constant(undefined), fc.constant(''), fc.constant('0'), fc.integer().map(String), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String));

describe('keepsSuspects and suspectsPending: one rule in TypeScript and in Lua', () => {
  it('case: an empty `suspects` text holds no suspect for either language (Lua took any present field as pending)', async () => {
    await setFields('', undefined);
    expect(await readings()).toEqual({ keeps: [false, false, false, false], pending: [false, false] });
    await setFields('["T1"]', '0');
    expect(await readings()).toEqual({ keeps: [true, true, true, true], pending: [true, true] });
    await setFields(undefined, '2');
    expect(await readings()).toEqual({ keeps: [true, true, true, true], pending: [false, false] });
  });

  it('property: every reading agrees on every combination of the two fields', async () => {
    await fc.assert(
      fc.asyncProperty(suspectsField, lostField, async (suspects, suspectsLost) => {
        await setFields(suspects, suspectsLost);
        const { keeps, pending } = await readings();
        expect(new Set(keeps).size).toBe(1);
        expect(new Set(pending).size).toBe(1);
        expect(keeps[0]).toBe(pending[0] || Number(suspectsLost ?? 0) > 0);
      }),
      {
        numRuns: 150,
        examples: [[undefined, undefined], ['', undefined], ['', '0'], ['', '3'], ['["T1"]', undefined], [undefined, '1'], [undefined, '-1'], [undefined, ''], ['x', '9223372036854775807']],
      },
    );
  });
});
