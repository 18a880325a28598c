/**
 * `scheduleCheckSoon` (a stream's first check, moved as it opens): the moves asked in one turn of the event loop go
 * as one ZADD XX (a fresh worker reattaching thousands of streams sent one ZADD per stream; docs/performance.md,
 * recovery). Each caller's promise resolves once that ZADD answered; an entry gone meanwhile is not put back; a move
 * asked in a later turn goes in a ZADD of its own.
 */
import { describe, expect, it } from 'vitest';
import { Journal, indexMember, type DelegationRef } from '@durable-a2a/shared';
import { startMonitor, useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

describe('scheduleCheckSoon', () => {
  it('five moves in one turn: one ZADD XX; a sixth entry removed first is not put back; a later turn: its own ZADD', async () => {
    const journal = new Journal(redis(), { prefix: 'check-soon' });
    const refs: DelegationRef[] = Array.from({ length: 6 }, (_, index) => ({ workflowId: `wf-${index}`, delegationId: 'main.1' }));
    for (const ref of refs) await journal.addToIndex(ref, 1_000);
    await journal.removeFromIndex(refs[5]!);
    const unfinished = journal.keys.unfinished();
    const monitor = await startMonitor(redisServer().url);
    const moves: string[][] = [];
    let markerSeen = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'zadd' && args[1] === unfinished) moves.push(args.slice(2));
      if (args[0]?.toLowerCase() === 'echo' && args[1] === 'check-soon-marker') markerSeen = true;
    });
    try {
      // One turn: every call before the first await.
      await Promise.all(refs.map((ref, index) => journal.scheduleCheckSoon(ref, 2_000 + index)));
      for (const [index, ref] of refs.slice(0, 5).entries()) expect(Number(await redis().zscore(unfinished, indexMember(ref.workflowId, ref.delegationId)))).toBe(2_000 + index);
      expect(await redis().zscore(unfinished, indexMember(refs[5]!.workflowId, refs[5]!.delegationId))).toBeNull();
      await journal.scheduleCheckSoon(refs[0]!, 3_000);
      expect(Number(await redis().zscore(unfinished, indexMember(refs[0]!.workflowId, refs[0]!.delegationId)))).toBe(3_000);
      await redis().echo('check-soon-marker');
      await eventually(async () => markerSeen, 'the monitor saw the marker', 10_000);
    } finally {
      monitor.disconnect();
    }
    expect(moves).toHaveLength(2);
    expect(moves[0]).toEqual(['XX', ...refs.flatMap((ref, index) => [String(2_000 + index), indexMember(ref.workflowId, ref.delegationId)])]);
    expect(moves[1]).toEqual(['XX', '3000', indexMember(refs[0]!.workflowId, refs[0]!.delegationId)]);
  }, 60_000);
});
