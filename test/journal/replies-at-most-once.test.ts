/**
 * Replies at most once (field case C1): the reply's 'sending' mark is a lease owned by one worker;
 * a second reply job that finds it never sends again while the first may still be sending. Real fleet,
 * real BullMQ, a raw node:http agent that counts what it receives.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRedisClient, enqueueReply, queuePrefix } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { agentMessage, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();

describe('replies at most once (C1)', () => {
  let producer: Producer | undefined;
  let fleet: Fleet | undefined;
  let agent: ScriptedAgentHandle | undefined;
  let send: Queue | undefined;
  afterEach(async () => {
    await fleet?.close();
    await send?.close();
    await agent?.close();
    await producer?.close();
  });

  it('two reply jobs race: the agent receives the reply exactly once', async () => {
    const prefix = 'wj-c1';
    const question = agentMessage('two rooms or one?', { messageId: 'q1', taskId: 'T1' });
    const replies: string[] = [];
    let answered = false;
    agent = await startScriptedAgent({
      SendMessage: async (params) => {
        if (params.message.taskId !== 'T1') return { result: { task: task('T1', 'INPUT_REQUIRED', { contextId: params.message.contextId, history: [params.message], message: question }) } };
        replies.push(params.message.messageId);
        // A slow agent: the reply is still being taken when the second job looks.
        await sleep(1_500);
        answered = true;
        return { result: { task: task('T1', 'COMPLETED', { history: [params.message], artifacts: { a1: 'booked' } }) } };
      },
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'INPUT_REQUIRED', { message: question }))] }),
      // Until the agent has finished taking the reply, it still asks (its history does not show the reply yet).
      GetTask: () => ({ result: answered ? task('T1', 'COMPLETED', { artifacts: { a1: 'booked' } }) : task('T1', 'INPUT_REQUIRED', { message: question }) }),
    });
    producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `${prefix}-1` });
    await eventually(async () => (await producer!.get(id)).openQuestions.length === 1, 'parked on the question', 15_000);
    const reply = await producer.reply(id, 'one');
    await eventually(async () => replies.length >= 1, 'the agent is taking the reply', 10_000);
    // A second job for the same reply (a requeue by the sweep, a stalled job run again) while the first is sending.
    send = new Queue('send', { connection: createRedisClient(redisServer().url), prefix: queuePrefix(prefix) });
    const [delegationId] = await producer.journal.delegationIds(id);
    await enqueueReply({ send }, { workflowId: id, delegationId: delegationId! }, reply.messageId, Date.now());
    await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', 'completed', 20_000);
    await sleep(500);
    expect(replies).toEqual([reply.messageId]);
    expect((await producer.journal.getDelegation({ workflowId: id, delegationId: delegationId! }))?.replyState).toBe('sent');
  });
});
