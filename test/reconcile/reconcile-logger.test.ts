/**
 * The reconcile of one delegation makes its child logger (bindings: queue, ref, step, messageId, taskId, job id) on
 * its first line only. pino's `child` serializes and redacts its bindings when made; after a whole-fleet crash a fresh
 * worker reconciles every followed delegation twice (its start-up sweep finds the dead worker's lease held, the
 * dead-worker sweep reattaches), and most of those runs log nothing (docs/performance.md, recovery).
 */
import { describe, expect, it } from 'vitest';
import type { Fleet } from '@durable-a2a/workers';
import { createLogger, type Logger } from '@durable-a2a/shared';
import { reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { startLongTasks } from '../harness/long-tasks.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();

/** A logger at `level` whose lines go to `lines` (parsed) and whose `child` calls are counted. */
function countingLogger(level: string): { logger: Logger; lines: Record<string, unknown>[]; children: () => number } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const child = logger.child.bind(logger);
  let children = 0;
  logger.child = ((...args: Parameters<Logger['child']>) => {
    children++;
    return child(...args);
  }) as Logger['child'];
  return { logger, lines, children: () => children };
}

describe("a delegation's reconcile and its logger", () => {
  it('a lease held (nothing to log): no child logger made; a reattach at info: its line carries the bindings', async () => {
    const prefix = 'reconcile-logger';
    const { agent, producer } = await startLongTasks(redisServer().url, prefix);
    const first: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['send', 'follow'], reconcileIntervalMs: 600_000 });
    keep(agent, producer);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'a long job' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => (await producer.journal.getDelegation(ref))?.state === 'WORKING' && (await producer.journal.followLeaseRemainingMs(ref)) > 0, 'the step is followed', 60_000);

    const quiet = countingLogger('warn');
    expect(await reconcileDelegation({ ...first.context, logger: quiet.logger }, ref, 'job-1')).toBe('followed');
    expect(quiet.children()).toBe(0);
    expect(quiet.lines).toEqual([]);

    // A graceful close hands the stream over (its lease given back); a fleet without a follow worker reattaches it.
    await first.close();
    const second: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: ['send'], reconcileIntervalMs: 600_000 });
    keep(second);
    const record = (await producer.journal.getDelegation(ref))!;
    const told = countingLogger('info');
    expect(await reconcileDelegation({ ...second.context, logger: told.logger }, ref, 'job-2')).toBe('reattached');
    expect(told.children()).toBe(1);
    expect(told.lines).toEqual([
      expect.objectContaining({
        msg: 'reattached: nobody was following this task; following it again',
        queue: 'reconcile',
        workflowId: id,
        delegationId: 'main.1',
        step: record.step,
        messageId: record.messageId,
        taskId: record.taskId,
        jobId: 'job-2',
        state: 'WORKING',
      }),
    ]);
  }, 120_000);
});
