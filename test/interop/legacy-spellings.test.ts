/**
 * Edge spellings and shapes (docs/a2a-edge.md) through a real fleet (private redis-server, scripted raw agent): R26 (the legacy
 * spelling of a state on the stream and in GetTask) and V4 (0x1E before JSON, whole-Task events) end
 * COMPLETED with one SendMessage, now that the edge reads them.
 */
import { describe, expect, it } from 'vitest';
import { useRedisServer } from '../harness/redis.ts';
import { useScriptedFleet } from '../harness/lifecycle.ts';
import { workflowSettled } from '../harness/fleet.ts';
import { ev, task, taskEvent, type ScriptedHandlers } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
const startCase = useScriptedFleet(redisServer);
let counter = 0;

const frame = (result: unknown): string => JSON.stringify({ jsonrpc: '2.0', id: 1, result });
const completedT1 = { id: 'T1', status: { state: 'completed' }, artifacts: [{ artifactId: 'a1', parts: [{ text: 'done' }] }] };

async function delegateTo(handlers: ScriptedHandlers) {
  const prefix = `wild-edge-${++counter}`;
  const { agent, producer } = await startCase(
    {
      SendMessage: (params) => ({ result: { task: task('T1', 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } }),
      ...handlers,
    },
    { prefix },
  );
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-1` });
  return { view: await workflowSettled(producer, id, 30_000), agent };
}

describe('edge cases through the fleet', () => {
  it('R26: stream WORKING then statusUpdate "completed", GetTask bare "completed" -> COMPLETED, one send', async () => {
    const { view, agent } = await delegateTo({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING')), ev(frame({ statusUpdate: { taskId: 'T1', status: { state: 'completed', timestamp: new Date().toISOString() } } }))] }),
      GetTask: () => ({ result: completedT1 }),
    });
    expect(view.state).toBe('COMPLETED');
    // a1 = "done" is only in GetTask: reading it after a terminal status update is a workers rule (reported to the lead).
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('V4: data lines starting with 0x1E, whole-Task events without kind -> COMPLETED, one send', async () => {
    const snapshot = (state: string) => `data: \x1E${frame({ ...completedT1, contextId: undefined, status: { state } })}\n\n`;
    const { view, agent } = await delegateTo({
      SubscribeToTask: () => ({ sse: [snapshot('working'), snapshot('completed')] }),
      GetTask: () => ({ result: completedT1 }),
    });
    expect(view.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
  });
});
