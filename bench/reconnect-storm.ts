/**
 * Benchmark 4, reconnect storm: M tasks followed by one worker process, then
 * the agent restarts keeping its tasks (`restart({ forgetTasks: false })`:
 * every stream is cut, every execution abandoned, the task records stay
 * WORKING). Measured at the agent: subscriptions per 100 ms window (peak
 * against the uniform average) and the time until every task has been
 * subscribed to again. The fleet runs its defaults: 50 subscriptions per
 * 1,000 ms fleet-wide, full-jitter backoff (base 500 ms, cap 30 s).
 *
 * The agent serves HTTP+JSON only, so each subscription is visible with its
 * task id in the URL (`…/tasks/<id>:subscribe`); the agent's request log is
 * sampled every 100 ms, which is the window resolution.
 */
import type { DemoAgentHandle } from '../test/harness/agent.ts';
import { runsSlowly } from '../test/harness/agent-behaviours.ts';
import { BENCH_STREAM_IDLE_TIMEOUT_MS, delegateMany, followedBy, round, scaled, seconds, sleep, spawnedWorkerId, untilEveryRow, type BenchResult } from './common.ts';
import { startInProcessAgentRig } from './rig.ts';

const PREFIX = 'storm';
const WINDOW_MS = 100;
/** How long to keep watching after the last task was reattached (steady state). */
const AFTER_MS = 5_000;
const SUBSCRIBE = /\/tasks\/([^/?]+?)(?::|%3A)subscribe/i;

export async function run(scale: number): Promise<BenchResult> {
  const streams = scaled(1_000, scale, 10);
  const rig = await startInProcessAgentRig(PREFIX, { behaviour: runsSlowly(600_000), bindings: ['HTTP+JSON'] });
  const { redisServer, agent, producer, reader } = rig;
  try {
    const worker = rig.spawn({
      REDIS_URL: redisServer.url,
      DA2A_PREFIX: PREFIX,
      DA2A_CONCURRENCY: `follow=${streams + 100}`,
      DA2A_STREAM_IDLE_TIMEOUT_MS: String(BENCH_STREAM_IDLE_TIMEOUT_MS),
      // Production sweep and lock timings: the storm is the follow queue's business.
      DA2A_RECONCILE_INTERVAL_MS: '30000',
      DA2A_LOCK_DURATION_MS: '30000',
      DA2A_STALLED_INTERVAL_MS: '30000',
    });
    await worker.ready;
    const workerId = spawnedWorkerId(worker.child.pid!);
    const refs = await delegateMany(producer, agent.cardUrl, streams, { text: 'job', keyPrefix: 'storm' });
    const setupStarted = performance.now();
    await untilEveryRow(reader, PREFIX, refs, followedBy(workerId), 'reconnect-storm: every stream open');
    const setupSeconds = seconds(performance.now() - setupStarted);
    const taskIds = new Set((await Promise.all(refs.map((ref) => producer.journal.getDelegation(ref)))).map((record) => record!.taskId!));

    const watch = watchSubscriptions(agent, taskIds);
    const restartAt = performance.now();
    await agent.restart({ forgetTasks: false });
    const allAt = await watch.allReattached(600_000);
    await sleep(AFTER_MS);
    const samples = watch.stop();

    const reattachMs = allAt - restartAt;
    const windows = Math.max(1, Math.ceil(reattachMs / WINDOW_MS));
    const counts = new Array<number>(windows).fill(0);
    let during = 0;
    let after = 0;
    for (const at of samples) {
      const offset = at - restartAt;
      if (offset < 0) continue;
      if (offset <= reattachMs) {
        counts[Math.min(windows - 1, Math.floor(offset / WINDOW_MS))]!++;
        during++;
      } else after++;
    }
    const peak = Math.max(...counts);
    const average = during / windows;
    const perSecond = Array.from({ length: Math.ceil(windows / 10) }, (_, second) => counts.slice(second * 10, second * 10 + 10).reduce((a, b) => a + b, 0));
    return {
      name: 'reconnect-storm',
      title: 'Reconnect storm after an agent restart',
      figures: [
        { metric: 'followed tasks', value: streams, unit: '' },
        { metric: 'restart → every task subscribed again', value: seconds(reattachMs), unit: 's' },
        { metric: 'limiter floor (tasks / 50 per s)', value: round(streams / 50, 1), unit: 's' },
        { metric: 'peak subscriptions in one 100 ms window', value: peak, unit: '' },
        { metric: 'uniform average per 100 ms window', value: round(average, 2), unit: '' },
        { metric: 'peak / average', value: round(peak / average, 2), unit: '' },
        { metric: 'subscriptions until all reattached', value: during, unit: `for ${streams} tasks` },
        { metric: `subscriptions per second in the ${AFTER_MS / 1000} s after (tasks idle on the agent)`, value: round(after / (AFTER_MS / 1000), 1), unit: '1/s' },
        { metric: 'initial subscription of all streams (before the restart)', value: setupSeconds, unit: 's' },
      ],
      notes: [
        `One worker process (follow concurrency ${streams + 100}, defaults: subscribe limit 50/1000 ms, backoff base 500 ms cap 30 s, 30 s sweeps and locks) follows ${streams} tasks of an HTTP+JSON SDK agent.`,
        'restart({ forgetTasks: false }) cuts every stream and abandons every execution; the tasks stay WORKING with no execution behind them, so a subscription gets the snapshot and then the stream ends.',
        `Subscriptions per second from the restart: ${perSecond.join(', ')}.`,
        'Samples are taken every 100 ms from the agent\'s request log in the benchmark process (which also hosts the agent), so a window is ±1 sample.',
      ],
    };
  } finally {
    await rig.close();
  }
}

/** Samples the agent's request log every WINDOW_MS; remembers when each task was first subscribed to again. */
function watchSubscriptions(agent: DemoAgentHandle, taskIds: ReadonlySet<string>) {
  const samples: number[] = [];
  const seen = new Set<string>();
  let cursor = agent.httpRequests.length;
  let allAt: number | undefined;
  const sample = () => {
    const now = performance.now();
    const requests = agent.httpRequests;
    for (; cursor < requests.length; cursor++) {
      const match = SUBSCRIBE.exec(requests[cursor]!.url);
      if (!match) continue;
      samples.push(now);
      const taskId = decodeURIComponent(match[1]!);
      if (taskIds.has(taskId)) seen.add(taskId);
    }
    if (allAt === undefined && seen.size === taskIds.size) allAt = now;
  };
  const timer = setInterval(sample, WINDOW_MS);
  return {
    async allReattached(timeoutMs: number): Promise<number> {
      const deadline = Date.now() + timeoutMs;
      while (allAt === undefined) {
        if (Date.now() > deadline) throw new Error(`reconnect-storm: only ${seen.size} of ${taskIds.size} tasks resubscribed`);
        await sleep(WINDOW_MS);
      }
      return allAt;
    },
    stop(): number[] {
      clearInterval(timer);
      sample();
      return samples;
    },
  };
}
