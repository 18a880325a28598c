/**
 * V2 streaming sends: an agent that refuses SendStreamingMessage (-32601) late, after sendSettleMs.
 * The SendMessage fallback runs inside the same send lease, so a reconciler cannot search (finding
 * nothing: the refusal created no task) and resend in a gap between two leases: one SendMessage.
 * Before the fix the fallback released and re-took the lease; the gap is widened here on purpose: the
 * first release of the send lease waits until the reconciler resent or the task was bound, as a worker
 * descheduled between two Redis calls would (review finding; two SendMessages and two tasks before).
 */
import { afterEach, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { Journal } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startScriptedAgent, task, type ScriptedAgentHandle, type ScriptedHandlers } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
let producer: Producer | undefined;
let fleet: Fleet | undefined;
let agent: ScriptedAgentHandle | undefined;
const originalLease = Journal.prototype.lease;

afterEach(async () => {
  (Journal.prototype as any).lease = originalLease;
  await fleet?.close();
  await agent?.close();
  await producer?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('a late streaming refusal: the SendMessage fallback never leaves beside a reconciler resend (one SendMessage, one task)', async () => {
  const prefix = `streaming-fallback-${Date.now()}`;
  const created: any[] = [];
  const handlers: ScriptedHandlers = {
    // The card declares streaming; the agent refuses the method, slowly (4 s > sendSettleMs 3 s).
    ...( { SendStreamingMessage: async () => (await sleep(4_000), { error: { code: -32601, message: 'Method not found' } }) } as any),
    SendMessage: (params) => {
      created.push(params.message);
      const id = `T-${created.length}`;
      return { result: { task: task(id, 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: id } }) } };
    },
    ListTasks: () => ({ result: { tasks: created.map((m, i) => task(`T-${i + 1}`, 'COMPLETED', { contextId: m.contextId, history: [m] })), nextPageToken: '', pageSize: 50, totalSize: created.length } }),
    GetTask: (params) => {
      const index = Number(String(params.id).slice(2)) - 1;
      return created[index] ? { result: task(params.id, 'COMPLETED', { contextId: created[index].contextId, history: [created[index]] }) } : { error: { code: -32001, message: 'Task not found' } };
    },
    SubscribeToTask: () => ({ error: { code: -32004, message: 'Task is in a terminal state' } }),
  };
  agent = await startScriptedAgent(handlers);
  producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });

  let widened = false;
  (Journal.prototype as any).lease = async function (this: Journal, ref: any, op: string, token: string, durationMs?: number) {
    const result = await originalLease.call(this, ref, op as never, token, durationMs);
    if (op === 'release' && token.includes('/send/') && !widened) {
      widened = true;
      // The gap between the streaming attempt's release and the fallback's acquire: let the reconciler run in it.
      await eventually(async () => {
        const record = await producer!.journal.getDelegation(ref);
        return (record?.resendCount ?? 0) >= 1 || record?.taskId !== undefined;
      }, 'reconciler resent or task bound', 15_000).catch(() => undefined);
    }
    return result;
  };

  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, streamingSends: true, streamQuietMs: 20_000 });
  const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-x` });
  await eventually(async () => (await producer!.get(id)).state !== 'RUNNING', 'finished', 40_000);
  await sleep(6_000); // let the second fallback land too
  const record = await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
  expect(widened).toBe(true);
  expect(agent.count('SendStreamingMessage')).toBe(1);
  expect(agent.count('SendMessage')).toBe(1);
  expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T-1', resendCount: 0 });
}, 90_000);
