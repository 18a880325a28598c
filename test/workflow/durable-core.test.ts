import { describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { createRedisClient } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { useDemoAgent } from '../harness/agent.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { completesWith, asksForInput, completionSteps } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const agent = useDemoAgent({ behaviour: completesWith('Hello, big world!', { chunks: 3, delayMs: 50 }) });
let producer: Producer;
let fleet: Fleet | undefined;
let prefix = 0;
closeAfterEach(
  () => ({ fleet, producer }),
  () => void (fleet = undefined),
);

async function setUp() {
  const keyPrefix = `core${++prefix}`;
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: keyPrefix });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: keyPrefix });
  return keyPrefix;
}

describe('durable delegation', () => {
  it('delegates, follows the stream and records the artifacts: one SendMessage', async () => {
    await setUp();
    const { id, messageId } = await producer.delegate({ agent: agent().cardUrl, text: 'say hello', idempotencyKey: 'happy-1' });
    const done = await eventually(async () => {
      const view = await producer.get(id);
      return view.state === 'COMPLETED' && view;
    }, 'workflow completed');
    const attempt = done.steps[0]!.attempts[0]!;
    expect(attempt.state).toBe('COMPLETED');
    expect(attempt.resultText).toBe('Hello, big world!');
    expect(attempt.messageId).toBe(messageId);
    expect(agent().sendMessageCount(messageId)).toBe(1);
    // The settle drops the index entries after the decision that completed the workflow (crash window 6).
    await eventually(async () => (await producer.journal.unfinishedCount()) === 0, 'the unfinished index drained', 5_000);
  });

  it('the same idempotency key returns the same delegation, never a second one', async () => {
    await setUp();
    const first = await producer.delegate({ agent: agent().cardUrl, text: 'once', idempotencyKey: 'same-key' });
    const second = await producer.delegate({ agent: agent().cardUrl, text: 'once', idempotencyKey: 'same-key' });
    expect(second).toEqual({ id: first.id, created: false, messageId: first.messageId });
    await eventually(async () => (await producer.get(first.id)).state === 'COMPLETED', 'completed');
    expect(agent().sendMessageCount(first.messageId)).toBe(1);
  });

  it('rejects invalid input with a typed error naming the field, writing nothing', async () => {
    const keyPrefix = await setUp();
    const redis = createRedisClient(redisServer().url);
    const cases: [object, string][] = [
      [{ text: 'x' }, 'agent'],
      [{ agent: 'ftp://x', text: 'x' }, 'agent'],
      [{ agent: agent().cardUrl, text: '' }, 'text'],
      [{ agent: agent().cardUrl, text: 'x', idempotencyKey: 'has spaces!' }, 'idempotencyKey'],
    ];
    for (const [input, field] of cases) {
      await expect(producer.delegate(input as never)).rejects.toMatchObject({ code: 'INVALID_INPUT', field });
    }
    // KEYS asks one node; on a cluster, ask every master.
    const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
    // The workers' own liveness keys (`{fleet}`: the heartbeat, once per process per second) are not the producer's.
    const written = (await Promise.all(nodes.map((node) => node.keys(`${keyPrefix}:*`)))).flat().filter((key) => !key.startsWith(`${keyPrefix}:{fleet}:`));
    expect(written).toEqual([]);
    await redis.quit();
  });

  it('parks on INPUT_REQUIRED with the question and answers on the same task', async () => {
    await setUp();
    agent().setBehaviour(asksForInput('two rooms or one?', (answer) => completionSteps(`booked ${answer}`)));
    try {
      const { id } = await producer.delegate({ agent: agent().cardUrl, text: 'book a hotel', idempotencyKey: 'hotel-q' });
      const [question] = await eventually(async () => {
        const open = await producer.questions(id);
        return open.length > 0 && open;
      }, 'open question');
      expect(question!.text).toBe('two rooms or one?');
      const reply = await producer.reply(id, 'two');
      const again = await producer.reply(id, 'two'); // the same reply again: harmless, the earlier one
      expect(again).toEqual({ messageId: reply.messageId, created: false });
      await expect(producer.reply(id, 'one')).rejects.toMatchObject({ code: 'NO_OPEN_QUESTION' }); // a different one: refused
      const done = await eventually(async () => {
        const view = await producer.get(id);
        return view.state === 'COMPLETED' && view;
      }, 'completed after reply');
      const attempt = done.steps[0]!.attempts[0]!;
      expect(attempt.resultText).toBe('booked two');
      const followUp = agent().receivedMessages.find((message) => message.messageId === reply.messageId)!;
      expect(followUp.taskId).toBe(attempt.taskId);
      expect(followUp.contextId).toBe(attempt.contextId);
      expect(agent().receivedMessages.filter((message) => message.taskId === attempt.taskId && message.isFollowUp)).toHaveLength(1);
    } finally {
      agent().setBehaviour(completesWith('Hello, big world!', { chunks: 3, delayMs: 50 }));
    }
  });
});

describe('idempotency conflicts and finished workflows', () => {
  it('the same key with a different request is refused (nothing written); cancelling a finished workflow says so', async () => {
    await setUp();
    const { id } = await producer.delegate({ agent: agent().cardUrl, text: 'first request', idempotencyKey: 'conflict-1' });
    await expect(producer.delegate({ agent: agent().cardUrl, text: 'another request', idempotencyKey: 'conflict-1' })).rejects.toMatchObject({ code: 'IDEMPOTENCY_CONFLICT' });
    await eventually(async () => (await producer.get(id)).state === 'COMPLETED', 'completed');
    expect((await producer.get(id)).steps[0]!.attempts).toHaveLength(1);
    await expect(producer.cancel(id)).rejects.toMatchObject({ code: 'WORKFLOW_FINISHED' });
  });
});
