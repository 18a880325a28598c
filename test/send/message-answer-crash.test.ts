/**
 * A final Message naming a task the agent keeps no task for (an @a2a-js/sdk executor copying its request context's
 * task id into its only reply), with a worker process SIGKILLed after the send's answer was journaled and before its
 * follow read the named task: the row holds the Message (the bound SUBMITTED status's message), so the fresh worker
 * that reads the task (its reconciler, another process) and hears TaskNotFound completes from it, never LOST, one
 * SendMessage. The in-process cases are in test/send/message-answer.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { startDemoAgent } from '../harness/agent.ts';
import { useCrashScene } from '../harness/crash-scene.ts';

const scene = useCrashScene({
  prefix: 'message-answer-crash',
  startAgents: () => startDemoAgent({ behaviour: () => [{ directMessage: 'done, room 12', withTaskId: true }] }),
  stopAgents: (agent) => agent.close(),
});

describe('a final Message naming a task the agent keeps no task for, the worker killed before the follow', () => {
  it('a fresh worker reads the task, hears TaskNotFound and completes from the Message kept on the row: one SendMessage', async () => {
    const { producer } = scene.setUp();
    const agent = scene.agents();
    const worker = scene.spawn({ DA2A_CRASH_AT: 'follow.before-stream' });
    await worker.ready;
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'sdk-message-crash' });
    expect((await worker.exited).signal).toBe('SIGKILL');
    const orphan = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!;
    expect(orphan.state).toBe('SUBMITTED');
    expect(orphan.taskId).toBeDefined();
    expect(orphan.statusMessage).toMatchObject({ taskId: orphan.taskId, role: 'ROLE_AGENT', parts: [{ text: 'done, room 12' }] });

    await scene.startFleet();
    const view = await scene.reached(id);
    const attempt = view.steps[0]!.attempts[0]!;
    expect(attempt.state).toBe('COMPLETED');
    expect(JSON.stringify(attempt.result)).toContain('done, room 12');
    expect(agent.sendMessageCount(messageId)).toBe(1);
  }, 60_000);
});
