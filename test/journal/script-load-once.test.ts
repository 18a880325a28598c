/**
 * A pipelined script call (`callScriptMany`: the dead-worker sweep's release of a page of leases, the lease renewals)
 * on a server that does not hold the script yet: the client loads it once before its first page (and once again when
 * the server answers NOSCRIPT all the same: the calls then go again by digest). Before,
 * every call of the page went again as an EVAL with the script's text (a fresh worker after a whole-fleet crash: one
 * NOSCRIPT error and one EVAL per lease it took over; docs/performance.md, recov20).
 */
import { describe, expect, it } from 'vitest';
import { Journal, type DelegationRef } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

/** Calls of `command` since the last CONFIG RESETSTAT (INFO commandstats). */
async function calls(command: string): Promise<number> {
  const info = String(await redis().info('commandstats'));
  return Number(new RegExp(`cmdstat_${command.replace('|', '\\|')}:calls=(\\d+)`).exec(info)?.[1] ?? '0');
}

describe('callScriptMany on a server without the script', () => {
  it('ends five dead leases with one SCRIPT LOAD and no EVAL; a second page goes by digest alone; after a flush, one SCRIPT LOAD again', async () => {
    const journal = new Journal(redis(), { prefix: 'script-load' });
    const refs: DelegationRef[] = Array.from({ length: 15 }, (_, index) => ({ workflowId: `wf-${index}`, delegationId: 'main.1' }));
    for (const ref of refs) await redis().set(journal.keys.followLease(ref.workflowId, ref.delegationId), 'dead-worker/run-1', 'PX', 60_000);
    await redis().script('FLUSH');
    await redis().config('RESETSTAT');
    const first = await journal.endLeasesOf(['dead-worker'], refs.slice(0, 5));
    expect(first.ended.map(({ ref }) => ref)).toEqual(refs.slice(0, 5));
    expect(await calls('eval')).toBe(0);
    expect(await calls('script|load')).toBe(1);
    // Each call of the page answered NOSCRIPT first, then sent again, is a wasted EVALSHA: none.
    expect(await calls('evalsha')).toBe(5);
    const second = await journal.endLeasesOf(['dead-worker'], refs.slice(5, 10));
    expect(second.ended.map(({ ref }) => ref)).toEqual(refs.slice(5, 10));
    expect(await calls('eval')).toBe(0);
    expect(await calls('script|load')).toBe(1);
    expect(await calls('evalsha')).toBe(10);
    // The server lost its scripts (a restart, a flush): the page is answered NOSCRIPT, the script loaded once, the page sent again.
    await redis().script('FLUSH');
    const third = await journal.endLeasesOf(['dead-worker'], refs.slice(10));
    expect(third.ended.map(({ ref }) => ref)).toEqual(refs.slice(10));
    expect(await calls('eval')).toBe(0);
    expect(await calls('script|load')).toBe(2);
    expect(await calls('evalsha')).toBe(20);
    for (const ref of refs) expect(await redis().exists(journal.keys.followLease(ref.workflowId, ref.delegationId))).toBe(0);
  }, 60_000);
});
