/**
 * A budget (docs/performance.md, "Idle streams"): the Redis commands one follow lease's renewal costs. An idle worker
 * renews every lease it holds each `lockDurationMs / 3` (lease-renewal.ts), so with 10,000 open streams the renewal
 * is most of the commands it sends while nothing happens: renewFollow-2.lua's EVALSHA and its inner calls, as INFO
 * commandstats counts them. A lease still ours costs the EVALSHA, the row's HMGET, a GET and a PEXPIRE (a failed
 * SET NX before the GET made it five).
 */
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { Journal } from '@durable-a2a/shared';
import { onEveryServer, useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

/** Commands per renewal of a lease still ours: EVALSHA, HMGET, GET, PEXPIRE. */
const COMMANDS_PER_RENEWAL = 4;

let journal: Journal;
let counter = 0;
let rows = 0;

beforeEach(() => {
  journal = new Journal(redis(), { prefix: `rc${++counter}`, retentionMs: 60_000 });
});

/** Commands the server(s) ran since `CONFIG RESETSTAT`, by name, without the counting connections' own (INFO, CONFIG, QUIT, CLIENT, HELLO, SELECT). */
async function commandsSinceReset(): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const info of await onEveryServer(redisServer(), (server) => server.info('commandstats'))) {
    for (const match of String(info).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (/^(info|config|quit|client|hello|select)/.test(match[1]!)) continue;
      calls.set(match[1]!, (calls.get(match[1]!) ?? 0) + Number(match[2]));
    }
  }
  return calls;
}

const resetStats = () => onEveryServer(redisServer(), (server) => server.config('RESETSTAT'));
const total = (calls: Map<string, number>) => [...calls.values()].reduce((sum, count) => sum + count, 0);

/** `count` unfinished rows whose follow lease `token` holds. */
async function heldRows(count: number, token: string) {
  const refs = Array.from({ length: count }, (_, index) => ({ workflowId: `w${counter}-${index}-${++rows}`, delegationId: 'main.1' }));
  for (const ref of refs) {
    await redis().hset(journal.keys.delegation(ref.workflowId, ref.delegationId), 'state', 'WORKING');
    expect(await journal.lease(ref, 'acquire', token, 5_000)).toBe(true);
  }
  return refs;
}

describe('follow lease renewal: commands per lease', () => {
  it(`renewing leases still ours costs ${COMMANDS_PER_RENEWAL} commands each (EVALSHA, HMGET, GET, PEXPIRE), plus one ZADD for the batch`, async () => {
    const refs = await heldRows(20, 'a');
    // Loaded first, outside the count (SCRIPT LOAD once per connection).
    await journal.renewLeases([{ ref: refs[0]!, token: 'a' }], 7_000, () => 1);
    await resetStats();
    const renewals = await journal.renewLeases(refs.map((ref) => ({ ref, token: 'a' })), 7_000, () => 1);
    const calls = await commandsSinceReset();
    expect(renewals.map(({ lease }) => lease)).toEqual(refs.map(() => 'renewed'));
    expect(calls.get('set') ?? 0).toBe(0);
    expect(total(calls)).toBeLessThanOrEqual(refs.length * COMMANDS_PER_RENEWAL + 1);
    for (const ref of refs) expect(await redis().pttl(journal.keys.followLease(ref.workflowId, ref.delegationId))).toBeGreaterThan(5_000);
  });

  it('property: whoever holds the lease (us, nobody: it ran out, someone else), the renewal answers as before, leaves the lease as before, and costs at most 4 commands', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('ours', 'nobody', 'other'), fc.integer({ min: 1_000, max: 60_000 }), async (holder, durationMs) => {
        const [ref] = await heldRows(1, holder === 'other' ? 'b' : 'a');
        const leaseKey = journal.keys.followLease(ref!.workflowId, ref!.delegationId);
        if (holder === 'nobody') await redis().del(leaseKey);
        await journal.renewLeases([{ ref: ref!, token: 'a' }], durationMs, () => 1);
        // Once more, counted: the first left the lease ours (renewed or taken back) or someone else's.
        if (holder === 'nobody') await redis().del(leaseKey);
        await resetStats();
        const [renewal] = await journal.renewLeases([{ ref: ref!, token: 'a' }], durationMs, () => 1);
        const calls = await commandsSinceReset();
        expect(renewal!.lease).toBe({ ours: 'renewed', nobody: 'retaken', other: 'lost' }[holder]);
        expect(await redis().get(leaseKey)).toBe(holder === 'other' ? 'b' : 'a');
        const ttl = await redis().pttl(leaseKey);
        if (holder === 'other') expect(ttl).toBeLessThanOrEqual(5_000);
        else expect(ttl).toBeGreaterThan(durationMs - 1_000);
        expect(total(calls)).toBeLessThanOrEqual(COMMANDS_PER_RENEWAL + (holder === 'other' ? 0 : 1));
      }),
      { numRuns: 30 },
    );
  });
});
