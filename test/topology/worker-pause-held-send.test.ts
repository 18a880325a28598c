/**
 * A false death during a send (docs/recovery.md "Trade-offs"): the agent takes 25 s to answer SendMessage (it
 * creates the task only then), longer than the send's settle time (requestTimeoutMs + 1 s = 11 s here). While the
 * sender is alive its send lease keeps the reconciler from deciding; the question is what a pause of the sender
 * longer than its liveness TTL (SIGSTOP: nothing in the process runs, as in a long GC pause) does to that send.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { eventually, spawnSendWorker, startTestFleet, type WorkerProcess } from '../harness/fleet.ts';
import { startTaskAgent, type TaskAgentHandle } from '../harness/task-agent.ts';

const redisServer = useRedisServer();
let counter = 0;

describe('a sender paused past its liveness TTL while a slow agent holds its SendMessage', () => {
  let agent: TaskAgentHandle | undefined;
  let producer: Producer | undefined;
  let peer: Fleet | undefined;
  let sender: WorkerProcess | undefined;
  afterEach(async () => {
    if (sender && sender.child.exitCode === null) sender.child.kill('SIGCONT');
    await peer?.close();
    await sender?.kill();
    await producer?.close();
    await agent?.close();
  });

  async function sendMessages(pauseSender: boolean): Promise<number> {
    const prefix = `paused-sender${++counter}`;
    agent = await startTaskAgent({ sendMs: 25_000, taskMs: 200 });
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const timings = { lockDurationMs: 600_000, requestTimeoutMs: 10_000, livenessTtlMs: 3_000 };
    sender = spawnSendWorker(redisServer().url, prefix, timings);
    await sender.ready;
    peer = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'peer', ...timings });
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'held' });
    await eventually(async () => agent!.count('SendMessage') === 1, 'the SendMessage reached the agent');
    if (pauseSender) {
      sender.child.kill('SIGSTOP');
      await eventually(async () => ((await peer!.metrics.deadWorkers.get()).values[0]?.value ?? 0) === 1, 'the paused sender presumed dead', 30_000);
      sender.child.kill('SIGCONT');
    }
    await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', 'completed', 90_000);
    return agent.calls('SendMessage').filter((call) => call.params?.message?.messageId === messageId).length;
  }

  it('not paused: its send lease holds the reconciler off until the agent answers; one SendMessage', async () => {
    expect(await sendMessages(false)).toBe(1);
  }, 150_000);

  // The pause lets the sender's liveness key run out and the peer takes the sender's work over. Before the fix the
  // sweep also ended the send lease, and at the settle time the peer searched, found nothing (the agent had not
  // created the task yet) and sent the same messageId again while the first request was still open: two tasks at the
  // agent. A dead worker's send lease now runs to its own TTL (600 s here); the peer only searches meanwhile.
  it('paused past its liveness TTL: still one SendMessage', async () => {
    expect(await sendMessages(true)).toBe(1);
  }, 150_000);
});
