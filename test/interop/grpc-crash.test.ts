/**
 * The crash windows of test/topology/crash-recovery.test.ts against an agent whose card
 * offers only gRPC: real worker processes SIGKILLed at a named crash point, a
 * fresh fleet recovering from the journal alone, over the gRPC transport (the
 * journaled interface is GRPC 1.0).
 */
import { describe, expect, it } from 'vitest';
import { completesWith } from '../harness/agent-behaviours.ts';
import { startGrpcAgent } from '../harness/grpc-agent.ts';
import { useCrashScene } from '../harness/crash-scene.ts';

const scene = useCrashScene({
  prefix: 'grpccrash',
  startAgents: () => startGrpcAgent({ behaviour: completesWith('done', { delayMs: 300 }) }),
  stopAgents: (agent) => agent.stop(),
});

describe('crash recovery over gRPC', () => {
  it('killed after the agent accepted SendMessage, before the taskId was recorded: adopted by messageId, one SendMessage', async () => {
    const { producer } = scene.setUp();
    const agent = scene.agents();
    const worker = scene.spawn({ DA2A_CRASH_AT: 'send.after-request' });
    await worker.ready;
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'grpc-window-2' });
    expect((await worker.exited).signal).toBe('SIGKILL');
    const orphan = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!;
    expect(orphan).toMatchObject({ state: 'INTENT', agentInterface: { protocolBinding: 'GRPC', protocolVersion: '1.0' } });
    expect(orphan.taskId).toBeUndefined();
    expect(agent.sendMessageCount(messageId)).toBe(1);

    const fleet = await scene.startFleet();
    const view = await scene.reached(id);
    expect(view.steps[0]!.attempts[0]!.resendCount).toBe(0);
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect((await fleet.metrics.adoptions.get()).values[0]!.value).toBe(1);
  });

  it('killed before the request left: resent once over gRPC with the same messageId', async () => {
    const { producer } = scene.setUp();
    const agent = scene.agents();
    const worker = scene.spawn({ DA2A_CRASH_AT: 'send.after-mark' });
    await worker.ready;
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'grpc-window-1' });
    expect((await worker.exited).signal).toBe('SIGKILL');
    expect(agent.sendMessageCount(messageId)).toBe(0);

    await scene.startFleet();
    const view = await scene.reached(id);
    expect(view.steps[0]!.attempts[0]).toMatchObject({ resendCount: 1, messageId });
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect(agent.receivedMessages.filter((message) => message.messageId === messageId)).toHaveLength(1);
  });
});
