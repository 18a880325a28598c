/**
 * The crash windows of test/topology/crash-recovery.test.ts against an agent whose card
 * offers only gRPC: real worker processes SIGKILLed at a named crash point, a
 * fresh fleet recovering from the journal alone, over the gRPC transport (the
 * journaled interface is GRPC 1.0).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { startGrpcAgent, type GrpcAgentHandle } from '../harness/grpc-agent.ts';
import { eventually, spawnWorkerProcess, startTestFleet, type WorkerProcess } from '../harness/fleet.ts';

const redisServer = useRedisServer({ appendOnly: true });
let agent: GrpcAgentHandle;
let producer: Producer;
let fleet: Fleet | undefined;
const processes: WorkerProcess[] = [];
let counter = 0;

beforeAll(async () => {
  agent = await startGrpcAgent({ behaviour: completesWith('done', { delayMs: 300 }) });
});
afterAll(async () => {
  await agent.stop();
});
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
  await Promise.all(processes.splice(0).map((worker) => worker.kill()));
  await producer?.close();
});

function setUp(): string {
  const prefix = `grpccrash${++counter}`;
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  return prefix;
}

const spawn = (prefix: string, crashAt: string): WorkerProcess => {
  const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_CRASH_AT: crashAt });
  processes.push(worker);
  return worker;
};

const completed = (id: string) =>
  eventually(async () => {
    const view = await producer.get(id);
    return view.state === 'COMPLETED' && view;
  }, `workflow ${id} completed`, 30_000);

describe('crash recovery over gRPC', () => {
  it('killed after the agent accepted SendMessage, before the taskId was recorded: adopted by messageId, one SendMessage', async () => {
    const prefix = setUp();
    const worker = spawn(prefix, 'send.after-request');
    await worker.ready;
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'grpc-window-2' });
    expect((await worker.exited).signal).toBe('SIGKILL');
    const orphan = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!;
    expect(orphan).toMatchObject({ state: 'INTENT', agentInterface: { protocolBinding: 'GRPC', protocolVersion: '1.0' } });
    expect(orphan.taskId).toBeUndefined();
    expect(agent.sendMessageCount(messageId)).toBe(1);

    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    const view = await completed(id);
    expect(view.steps[0]!.attempts[0]!.resendCount).toBe(0);
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect((await fleet.metrics.adoptions.get()).values[0]!.value).toBe(1);
  });

  it('killed before the request left: resent once over gRPC with the same messageId', async () => {
    const prefix = setUp();
    const worker = spawn(prefix, 'send.after-mark');
    await worker.ready;
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'grpc-window-1' });
    expect((await worker.exited).signal).toBe('SIGKILL');
    expect(agent.sendMessageCount(messageId)).toBe(0);

    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    const view = await completed(id);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ resendCount: 1, messageId });
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect(agent.receivedMessages.filter((message) => message.messageId === messageId)).toHaveLength(1);
  });
});
