/**
 * Failover chaos, shared by `pnpm chaos:failover` (test/chaos/run-failover.ts) and its short version in
 * `pnpm test` (test/chaos/failover.test.ts): workflows in flight across two worker processes on a Sentinel set;
 * mid-run the replica falls behind (its replication stream is held back for `lagMs`, as on a slow link),
 * the primary is SIGKILLed, the Sentinels promote the replica, the workers, the producer and BullMQ
 * reconnect, and the old primary comes back as a replica. The invariants are those of `pnpm chaos`
 * (test/chaos/chaos.ts): nothing acknowledged is lost, no second SendMessage where the agent could be
 * searched, every delegation ends, no compensation twice. With the journal's durability setting on
 * (`replicas: 1`) they must hold; off, the run reports what the failover took.
 */
import type { SentinelSetHandle } from '../harness/sentinel.ts';
import { runChaos, type ChaosReport } from './chaos.ts';

export interface FailoverChaosOptions {
  sentinelSet: SentinelSetHandle;
  seed: number;
  workflows: number;
  /** WAIT for one replica after the critical journal writes (producer and workers). */
  awaitReplica: boolean;
  /** How long the replica lags before the kill. Default 800 (under the Sentinels' 1 s down-after). */
  lagMs?: number;
  /** When the failover starts, in ms after the run (uniform in [0.5, 1.5] ×), and not before half the workflows were started. Default 2_000. */
  failoverAfterMs?: number;
  workflowTimeoutMs?: number;
  /** Share of workflows that are travel sagas (with compensation); the rest are single delegations. Default 0.3. */
  tripShare?: number;
  log?: (line: string) => void;
}

/** WAIT's timeout in these runs: short, so a lagging replica turns into retries quickly. */
export const FAILOVER_WAIT_TIMEOUT_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the workload through one failover; `violations` is empty when every invariant held. */
export async function runFailoverChaos(options: FailoverChaosOptions): Promise<ChaosReport & { failover: { oldPrimary: number; newPrimary: number; promotedAfterMs: number } }> {
  const { sentinelSet } = options;
  const log = options.log ?? (() => undefined);
  const lagMs = options.lagMs ?? 800;
  const replicas = options.awaitReplica ? 1 : 0;
  const failover = { oldPrimary: 0, newPrimary: 0, promotedAfterMs: 0 };
  const report = await runChaos({
    seed: options.seed,
    workflows: options.workflows,
    redis: {
      url: sentinelSet.url,
      restart: () => Promise.reject(new Error('a Sentinel set is not restarted; it fails over')),
    },
    redisRestarts: false,
    failover: async () => {
      await sentinelSet.holdReplication(true);
      await sleep(lagMs);
      const killedAt = Date.now();
      failover.oldPrimary = await sentinelSet.killPrimary();
      await sentinelSet.holdReplication(false);
      failover.newPrimary = await sentinelSet.awaitPromotion(failover.oldPrimary);
      failover.promotedAfterMs = Date.now() - killedAt;
      log(`failover: primary ${failover.oldPrimary} SIGKILLed after ${lagMs} ms of replica lag; ${failover.newPrimary} promoted after ${failover.promotedAfterMs} ms`);
      // The old primary comes back (as a restarted pod would); the Sentinels make it a replica.
      await sentinelSet.servers.get(failover.oldPrimary)!.restart();
      await sentinelSet.awaitReplicas(1, 60_000);
      log('failover: the old primary is a replica again');
    },
    randomFaults: [],
    faultsFirst: ['primary-failover'],
    faultMeanMs: options.failoverAfterMs ?? 2_000,
    // Half started: the other half is created during the lag and the failover (acknowledged or refused).
    faultsAfterStarted: Math.floor(options.workflows / 2),
    workers: 2,
    inFlight: options.workflows,
    tripShare: options.tripShare ?? 0.3,
    workflowTimeoutMs: options.workflowTimeoutMs ?? 90_000,
    prefix: `failover${options.seed}`,
    workerEnvironment: { DA2A_JOURNAL_REPLICAS: String(replicas), DA2A_JOURNAL_WAIT_TIMEOUT_MS: String(FAILOVER_WAIT_TIMEOUT_MS) },
    producerOptions: { durability: { replicas, timeoutMs: FAILOVER_WAIT_TIMEOUT_MS } },
    log,
  });
  return { ...report, failover };
}
