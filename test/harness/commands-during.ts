/**
 * The commands a piece of work sent to Redis, seen by a MONITOR: for tests that count reads (the reconciler's workflow
 * check: test/workflow/reconcile-workflow-reads.test.ts, test/workflow/workflow-wait-memory.test.ts).
 */
import type { Redis } from 'ioredis';
import { startMonitor } from './redis.ts';
import { eventually } from './fleet.ts';

/**
 * Runs `run` under a Redis MONITOR of `url` and returns its result with the commands `matches` picked (each as its
 * arguments, the command first), every one sent before it ended: a marker ECHOed on `client` after `run` is awaited
 * (MONITOR reports commands in the order Redis ran them), for 10 s at most.
 */
export async function commandsDuring<T>(url: string, client: Pick<Redis, 'echo'>, matches: (args: string[]) => boolean, run: () => Promise<T>): Promise<{ result: T; seen: string[][] }> {
  const monitor = await startMonitor(url);
  const seen: string[][] = [];
  const marker = `commands-during-${Math.random()}`;
  let markerSeen = false;
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (matches(args)) seen.push(args);
    if (args[0]?.toLowerCase() === 'echo' && args[1] === marker) markerSeen = true;
  });
  try {
    const result = await run();
    await client.echo(marker);
    await eventually(async () => markerSeen, 'the monitor saw the marker', 10_000);
    return { result, seen };
  } finally {
    monitor.disconnect();
  }
}
