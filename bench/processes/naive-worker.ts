/**
 * The naive peer's worker: what a user of BullMQ + @a2a-js/sdk writes without durable-a2a. One BullMQ Worker
 * on one queue (`NAIVE_QUEUE`, concurrency `NAIVE_CONCURRENCY`); each job sends its message with the a2a-js
 * client's sendMessage and follows the task to its end (resubscribe, GetTask when refused), in one processor
 * call. A job whose task did not complete throws, so BullMQ retries it (the producer sets attempts). BullMQ's
 * own defaults otherwise: 30 s lock, 30 s stalled check, so a job of a killed worker runs again after its lock
 * expires: from the start, SendMessage included.
 */
import { Worker } from 'bullmq';
import { TaskState } from '@a2a-js/sdk';
import { z } from 'zod';
import { clientCache, followTask, sendTask } from './a2a-task.ts';
import { serveCalls } from './ipc.ts';

/** The job data the naive producer enqueues. */
export const NaiveJobSchema = z.object({ baseUrl: z.url(), text: z.string(), messageId: z.string() });

const config = z
  .object({ REDIS_URL: z.string(), NAIVE_QUEUE: z.string().default('peers-naive'), NAIVE_CONCURRENCY: z.coerce.number().int().positive().default(50) })
  .parse(process.env);
const clientFor = clientCache();

const worker = new Worker(
  config.NAIVE_QUEUE,
  async (job) => {
    const data = NaiveJobSchema.parse(job.data);
    const client = await clientFor(data.baseUrl);
    const state = await followTask(client, await sendTask(client, data.text, data.messageId));
    if (state !== TaskState.TASK_STATE_COMPLETED) throw new Error(`task ended ${state === undefined ? 'without a state' : TaskState[state]}`);
    return 'COMPLETED';
  },
  { connection: { url: config.REDIS_URL, maxRetriesPerRequest: null }, concurrency: config.NAIVE_CONCURRENCY },
);
await worker.waitUntilReady();

serveCalls({ pid: process.pid }, {}, () => worker.close());
