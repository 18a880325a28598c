/**
 * Durations past Node's timer range (2^31 − 1 ms, about 24.8 days): Node fires such a timer after 1 ms. A step whose
 * attempt deadline is 30 days (a person approves within a month) must be sent and followed as one with a day's
 * deadline: its held SendMessage not aborted as timed out at once (the request timeout is the attempt's time left), a
 * silent send stream not closed as idle at once; and `waitFor` with a month's timeout must wait. Each case failed
 * before the timers were `setLongTimeout` (a second SendMessage, a send stream closed after 1 ms, WaitTimeoutError).
 */
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import type { StartFleetOptions } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach, useScriptedFleet } from '../harness/lifecycle.ts';
import { workflowSettled } from '../harness/fleet.ts';
import { SU, ev, task, taskEvent, type ScriptedHandlers } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
const startCase = useScriptedFleet(redisServer);
const keep = closeKeptAfterEach();
let counter = 0;

const MONTH_MS = 30 * 24 * 3600 * 1000;
const HOLD_MS = 1_500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An agent that holds the send `HOLD_MS` before it answers (SendMessage) or sends its first event (a send stream), and
 * cannot be searched (ListTasks refused): only the request itself can bring the task back.
 */
function holdingAgent(): ScriptedHandlers & { SendStreamingMessage: ScriptedHandlers['SendMessage'] } {
  let message: any;
  const done = () => task('T-long', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a1: 'done' } });
  return {
    SendMessage: async (params: any) => ((message = params.message), await sleep(HOLD_MS), { result: { task: done() } }),
    SendStreamingMessage: (params: any) => ((message = params.message), { sse: [{ waitMs: HOLD_MS }, taskEvent(done()), ev(SU('COMPLETED', { taskId: 'T-long', contextId: message.contextId }))] }),
    ListTasks: () => ({ error: { code: -32601, message: 'Method not found' } }),
    GetTask: () => (message ? { result: done() } : { error: { code: -32001, message: 'Task not found' } }),
    SubscribeToTask: () => ({ error: { code: -32004, message: 'Task is in a terminal state' } }),
  };
}

async function monthLongStep(fleet: Partial<StartFleetOptions>) {
  const prefix = `long-${++counter}-${Date.now()}`;
  const started = await startCase(holdingAgent() as ScriptedHandlers, { prefix, fleet });
  const { id } = await started.producer.startWorkflow({ workflowId: `${prefix}-w`, steps: [{ name: 'main', agent: started.agent.cardUrl, message: { text: 'approve within a month' }, attemptDeadlineMs: MONTH_MS }] });
  return { view: await workflowSettled(started.producer, id, 40_000), agent: started.agent };
}

describe('durations past the timer range', () => {
  it('a held SendMessage of a step with a 30-day attempt deadline: not aborted at once; one SendMessage, COMPLETED', async () => {
    const { view, agent } = await monthLongStep({ requestTimeoutMs: 60_000 });
    expect(view.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('a send stream held silent, 30-day attempt deadline: not closed as idle at once; one SendStreamingMessage, COMPLETED', async () => {
    const { view, agent } = await monthLongStep({ streamingSends: true });
    expect(view.state).toBe('COMPLETED');
    expect(agent.count('SendStreamingMessage' as never)).toBe(1);
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);

  it('waitFor with a timeout of a month waits (it does not time out at once)', async () => {
    const prefix = `long-${++counter}-${Date.now()}`;
    const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    keep(producer);
    const { id } = await producer.delegate({ agent: 'http://127.0.0.1:9/.well-known/agent-card.json', text: 'never sent' });
    const controller = new AbortController();
    const waiting = producer.waitFor(id, { timeoutMs: MONTH_MS, signal: controller.signal }).then(
      () => 'returned',
      (error: unknown) => (controller.signal.aborted ? 'aborted' : `rejected: ${String(error)}`),
    );
    // Not a timed assertion: the wait must still be open after a second (the bug ended it within milliseconds).
    const first = await Promise.race([waiting, sleep(1_000).then(() => 'still waiting')]);
    controller.abort();
    expect(first).toBe('still waiting');
    expect(await waiting).toBe('aborted');
  }, 30_000);
});
