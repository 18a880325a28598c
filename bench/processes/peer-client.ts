/**
 * The client of a durable peer in its own process (`BENCH_PEER`): it submits delegations and awaits each one's
 * end, as that system's user would, while the work runs elsewhere (the naive worker, the durable-a2a worker,
 * restate-server and the Restate service endpoint).
 *
 * - naive: BullMQ `Queue.add` (job id = delegation key, 3 attempts, exponential backoff from 1 s), then
 *   `job.waitUntilFinished(QueueEvents)`.
 * - durable: `createProducer().delegate()` (idempotency key = delegation key), then `producer.waitFor()`.
 * - restate: fire-and-forget `POST /Peers/delegate/send` to the ingress (idempotency-key header = delegation
 *   key), then `GET /restate/invocation/<id>/attach` for its result.
 *
 * The delegation's message text is the key (`<tag>-<index>`), so the agent can count executions per delegation.
 * Calls: `round({ cardUrl, baseUrl, count, concurrency, tag })` → `{ completed, elapsedMs }` with at most
 * `concurrency` unsettled at once; `launch({ …, count, tag })` starts `count` at once and returns;
 * `launched({ tag, timeoutMs })` → `{ settled, completed, lastSettledAt }` (epoch ms) once all have settled or
 * `timeoutMs` has passed.
 */
import { performance } from 'node:perf_hooks';
import { Queue, QueueEvents } from 'bullmq';
import { z } from 'zod';
import { createProducer } from '@durable-a2a/producer';
import { mapLimit } from '../common.ts';
import { serveCalls } from './ipc.ts';
import type { RoundInput } from './side.ts';

interface DelegationInput {
  cardUrl: string;
  baseUrl: string;
  /** Message text, messageId and idempotency key at once. */
  key: string;
}

interface Peer {
  /** Submits one delegation and resolves when it settled: true when its task COMPLETED. */
  delegate(input: DelegationInput): Promise<boolean>;
  close(): Promise<void>;
}

/** How long one delegation may take before the client gives up on it. */
const DELEGATION_TIMEOUT_MS = 600_000;

const config = z
  .object({
    BENCH_PEER: z.enum(['naive', 'durable', 'restate']),
    REDIS_URL: z.string().optional(),
    BENCH_PREFIX: z.string().default('peers'),
    NAIVE_QUEUE: z.string().default('peers-naive'),
    RESTATE_INGRESS_URL: z.string().optional(),
  })
  .parse(process.env);

async function naivePeer(redisUrl: string): Promise<Peer> {
  const connection = { url: redisUrl, maxRetriesPerRequest: null };
  const queue = new Queue(config.NAIVE_QUEUE, { connection });
  const events = new QueueEvents(config.NAIVE_QUEUE, { connection });
  // One waiter per delegation in flight listens on these: C of them is not a leak.
  queue.setMaxListeners(0);
  events.setMaxListeners(0);
  await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
  return {
    async delegate({ baseUrl, key }) {
      const job = await queue.add(
        'delegate',
        { baseUrl, text: key, messageId: key },
        { jobId: key, attempts: 3, backoff: { type: 'exponential', delay: 1_000 }, removeOnComplete: { age: 3_600 }, removeOnFail: { age: 3_600 } },
      );
      return (await job.waitUntilFinished(events, DELEGATION_TIMEOUT_MS)) === 'COMPLETED';
    },
    async close() {
      await events.close();
      await queue.close();
    },
  };
}

function durablePeer(redisUrl: string): Peer {
  const producer = createProducer({ redis: redisUrl, addressPolicy: { allowLoopback: true }, prefix: config.BENCH_PREFIX });
  return {
    async delegate({ cardUrl, key }) {
      const { id } = await producer.delegate({ agent: cardUrl, text: key, idempotencyKey: key });
      return (await producer.waitFor(id, { timeoutMs: DELEGATION_TIMEOUT_MS })).state === 'COMPLETED';
    },
    close: () => producer.close(),
  };
}

const SendAnswerSchema = z.object({ invocationId: z.string() });

function restatePeer(ingressUrl: string): Peer {
  return {
    async delegate({ baseUrl, key }) {
      const sent = await fetch(`${ingressUrl}/Peers/delegate/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ baseUrl, text: key, messageId: key }),
      });
      if (!sent.ok) throw new Error(`restate ingress /send answered ${sent.status}: ${await sent.text()}`);
      const { invocationId } = SendAnswerSchema.parse(await sent.json());
      const attached = await fetch(`${ingressUrl}/restate/invocation/${invocationId}/attach`, { signal: AbortSignal.timeout(DELEGATION_TIMEOUT_MS) });
      if (!attached.ok) throw new Error(`restate ingress attach answered ${attached.status}: ${await attached.text()}`);
      return z.string().parse(await attached.json()) === 'TASK_STATE_COMPLETED';
    },
    close: async () => undefined,
  };
}

async function peerFromConfig(): Promise<Peer> {
  if (config.BENCH_PEER === 'restate') return restatePeer(z.string().parse(config.RESTATE_INGRESS_URL));
  const redisUrl = z.string().parse(config.REDIS_URL);
  return config.BENCH_PEER === 'naive' ? naivePeer(redisUrl) : durablePeer(redisUrl);
}

const peer = await peerFromConfig();

/** Delegations started by `launch`, by tag. */
const launches = new Map<string, { settled: number; completed: number; lastSettledAt: number; all: Promise<unknown> }>();

serveCalls(
  { pid: process.pid },
  {
    round: async (argument) => {
      const { cardUrl, baseUrl, count, concurrency, tag } = argument as RoundInput;
      const started = performance.now();
      const outcomes = await mapLimit(Array.from({ length: count }), concurrency, (_, index) => peer.delegate({ cardUrl, baseUrl, key: `${tag}-${index}` }));
      return { completed: outcomes.filter(Boolean).length, elapsedMs: performance.now() - started };
    },
    launch: async (argument) => {
      const { cardUrl, baseUrl, count, tag } = argument as RoundInput;
      const launch = { settled: 0, completed: 0, lastSettledAt: 0, all: Promise.resolve() as Promise<unknown> };
      const one = async (index: number) => {
        const completed = await peer.delegate({ cardUrl, baseUrl, key: `${tag}-${index}` }).catch(() => false);
        launch.settled++;
        if (completed) launch.completed++;
        launch.lastSettledAt = Date.now();
      };
      launch.all = Promise.all(Array.from({ length: count }, (_, index) => one(index)));
      launches.set(tag, launch);
      return null;
    },
    launched: async (argument) => {
      const { tag, timeoutMs } = argument as { tag: string; timeoutMs: number };
      const launch = launches.get(tag);
      if (!launch) throw new Error(`nothing launched under ${tag}`);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([launch.all, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
      return { settled: launch.settled, completed: launch.completed, lastSettledAt: launch.lastSettledAt };
    },
  },
  () => peer.close(),
);
