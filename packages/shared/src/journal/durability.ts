/**
 * Replica-acknowledged journal writes. Redis replication is asynchronous: a primary that dies may take
 * its last acknowledged writes with it, and the replica Sentinel promotes never saw them. For the two
 * writes the product acts on (the workflow and its intents, which the producer acknowledges to its
 * caller, and the `sendStartedAt` mark written before SendMessage leaves) the journal can wait for
 * `WAIT <replicas> <timeoutMs>`: the write is on at least `replicas` replicas before the caller is
 * answered and before any I/O to the agent. WAIT counts the replicas that acknowledged everything this
 * connection wrote so far, so it must run on the connection that wrote; a reconnect in between (a
 * failover) proves nothing, and counts as not acknowledged. Before a mark that lets a message leave
 * (`sendStartedAt`, a reply's `sending`) the journal waits once more, so that while the replicas are
 * behind no mark is written for a message that then cannot leave (it would cost a search and a resend).
 *
 * Not a guarantee against every loss: WAIT does not make Redis strongly consistent (a replica that
 * acknowledged may itself not be the one promoted when there are several; run `replicas` = all of them,
 * or let Sentinel prefer the most up-to-date replica, which it does by replication offset). Redis
 * Cluster: WAIT goes to the node serving each key's slot.
 */
import { Cluster, type Redis } from 'ioredis';
import { z } from 'zod';

/** How many replicas must acknowledge a critical journal write, and for how long to wait. */
export interface JournalDurability {
  /** Replicas that must acknowledge; 0 (default) = do not wait (a single Redis). */
  replicas: number;
  /** WAIT's timeout in ms (positive: WAIT 0 would block forever). Default 1_000. */
  timeoutMs: number;
}

export const NO_DURABILITY: JournalDurability = { replicas: 0, timeoutMs: 1_000 };

/** `DA2A_JOURNAL_REPLICAS` (default 0) and `DA2A_JOURNAL_WAIT_TIMEOUT_MS` (default 1000), for the workers' and the API's config schemas. */
export const JournalDurabilityEnvironment = {
  DA2A_JOURNAL_REPLICAS: z.coerce.number().int().min(0).max(16).default(0),
  DA2A_JOURNAL_WAIT_TIMEOUT_MS: z.coerce.number().int().positive().max(60_000).default(1_000),
};

/** The setting from a parsed environment. */
export const durabilityFrom = (environment: { DA2A_JOURNAL_REPLICAS: number; DA2A_JOURNAL_WAIT_TIMEOUT_MS: number }): JournalDurability => ({
  replicas: environment.DA2A_JOURNAL_REPLICAS,
  timeoutMs: environment.DA2A_JOURNAL_WAIT_TIMEOUT_MS,
});

/**
 * Fewer replicas than asked acknowledged a critical journal write within the timeout, or the connection
 * was re-established since the write. Nothing is lost by failing here: the write may or may not survive
 * a failover. Retryable: the producer's call again with the same idempotency key (or workflowId), a
 * send job later (its mark is then handled by the reconciler, which searches before any resend).
 */
export class ReplicationTimeoutError extends Error {
  override readonly name = 'ReplicationTimeoutError';
  readonly code = 'REPLICATION_TIMEOUT';
  readonly retryable = true;
  constructor(
    readonly acknowledged: number,
    readonly required: number,
    readonly timeoutMs: number,
    readonly reconnected = false,
  ) {
    super(
      reconnected
        ? 'the Redis connection was re-established after the journal write: replication not proven'
        : `journal write acknowledged by ${acknowledged} of ${required} replicas within ${timeoutMs} ms`,
    );
  }
}

const generations = new WeakMap<object, { count: number }>();

/** A number that changes whenever a connection of `redis` closes; take it before the writes, pass it to `awaitReplicas`. */
export function connectionGeneration(redis: Redis | Cluster): number {
  let generation = generations.get(redis);
  if (!generation) {
    const created = { count: 0 };
    generation = created;
    generations.set(redis, created);
    redis.on('close', () => created.count++);
  }
  return generation.count;
}

/** The node connections that served `keys` (one per distinct node; the client itself when not a Cluster). */
async function connectionsFor(redis: Redis | Cluster, keys: readonly string[]): Promise<Redis[]> {
  if (!(redis instanceof Cluster)) return [redis];
  const nodes = new Map<string, Redis>();
  for (const key of keys) {
    const slot = Number(await redis.cluster('KEYSLOT', key));
    const nodeKey = redis.slots[slot]?.[0];
    const node = redis.nodes('master').find((candidate) => `${candidate.options.host}:${candidate.options.port}` === nodeKey);
    if (!node) throw new ReplicationTimeoutError(0, 0, 0, true);
    nodes.set(nodeKey!, node);
  }
  return [...nodes.values()];
}

/**
 * Waits until `durability.replicas` replicas acknowledged every write this client made so far on the
 * node(s) serving `keys`. Does nothing when `replicas` is 0.
 * @param generation `connectionGeneration(redis)` taken before the writes.
 * @throws ReplicationTimeoutError too few acknowledgements, or a reconnect since `generation`.
 */
export async function awaitReplicas(redis: Redis | Cluster, durability: JournalDurability, keys: readonly string[], generation: number): Promise<void> {
  if (durability.replicas <= 0) return;
  for (const connection of await connectionsFor(redis, keys)) {
    const acknowledged = Number(await connection.call('WAIT', durability.replicas, durability.timeoutMs));
    if (connectionGeneration(redis) !== generation) throw new ReplicationTimeoutError(acknowledged, durability.replicas, durability.timeoutMs, true);
    if (acknowledged < durability.replicas) throw new ReplicationTimeoutError(acknowledged, durability.replicas, durability.timeoutMs);
  }
}
