/**
 * Edge spellings and shapes (docs/a2a-edge.md) through a real fleet (private redis-server, scripted raw agent): R26 (the legacy
 * spelling of a state on the stream and in GetTask) and V4 (0x1E before JSON, whole-Task events) end
 * COMPLETED with one SendMessage, now that the edge reads them.
 */
import { describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { ev, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
let producer: Producer | undefined;
let fleet: Fleet | undefined;
let agent: ScriptedAgentHandle | undefined;
let counter = 0;

closeAfterEach(
  () => ({ fleet, agent, producer }),
  () => void (fleet = agent = producer = undefined),
);

const frame = (result: unknown): string => JSON.stringify({ jsonrpc: '2.0', id: 1, result });
const completedT1 = { id: 'T1', status: { state: 'completed' }, artifacts: [{ artifactId: 'a1', parts: [{ text: 'done' }] }] };

async function delegateTo(handlers: Parameters<typeof startScriptedAgent>[0]) {
  const prefix = `wild-edge-${++counter}`;
  agent = await startScriptedAgent({
    SendMessage: (params) => ({ result: { task: task('T1', 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } }),
    ...handlers,
  });
  producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-1` });
  const view = await eventually(async () => {
    const current = await producer!.get(id);
    return current.state !== 'RUNNING' && current;
  }, 'delegation finished', 30_000);
  return view;
}

describe('edge cases through the fleet', () => {
  it('R26: stream WORKING then statusUpdate "completed", GetTask bare "completed" -> COMPLETED, one send', async () => {
    const view = await delegateTo({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING')), ev(frame({ statusUpdate: { taskId: 'T1', status: { state: 'completed', timestamp: new Date().toISOString() } } }))] }),
      GetTask: () => ({ result: completedT1 }),
    });
    expect(view.state).toBe('COMPLETED');
    // a1 = "done" is only in GetTask: reading it after a terminal status update is a workers rule (reported to the lead).
    expect(agent!.count('SendMessage')).toBe(1);
  });

  it('V4: data lines starting with 0x1E, whole-Task events without kind -> COMPLETED, one send', async () => {
    const snapshot = (state: string) => `data: \x1E${frame({ ...completedT1, contextId: undefined, status: { state } })}\n\n`;
    const view = await delegateTo({
      SubscribeToTask: () => ({ sse: [snapshot('working'), snapshot('completed')] }),
      GetTask: () => ({ result: completedT1 }),
    });
    expect(view.state).toBe('COMPLETED');
    expect(agent!.count('SendMessage')).toBe(1);
  });
});
