/**
 * attack33b: attacks on the newest code (the stall guard's give-back, stream order) and its edges (the push webhook,
 * a stalled worker's BullMQ job run again elsewhere) that HOLD. Each runs through the real fleet or the real webhook
 * on a private redis-server; the one that broke (a gone run's send lease left on an unmarked row) is
 * test/send/stale-send-lease.test.ts and test/topology/crash-give-back.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { applyTask } from '@durable-a2a/shared';
import { eventually, spawnWorkerProcess, startTestFleet } from '../harness/fleet.ts';
import { finished, recordOf, ref, useFieldCases } from '../harness/field-cases.ts';
import { startTestServer } from '../harness/api-server.ts';
import { holdingSendHandlers } from '../harness/holding-agent.ts';
import { SU, agentMessage, ev, startScriptedAgent, task, taskEvent } from '../harness/scripted-agent.ts';
import { useRedisServer } from '../harness/redis.ts';
import { createProducer } from '@durable-a2a/producer';

const h = useFieldCases();

/** The fleet's clock, held `stallMs` at every stall guard's read (`requestReady`): a host that stalls after every mark. */
function alwaysStalledAfterMark(stallMs: number) {
  let skew = 0;
  let guards = 0;
  return {
    now: () => {
      if (/\brequestReady\b/.test(new Error().stack ?? '')) {
        skew += stallMs;
        guards++;
      }
      return Date.now() + skew;
    },
    guards: () => guards,
  };
}

describe('attack33b: the stall guard give-back', () => {
  it('a host stalled after EVERY mark never sends, gives every mark back and ends at the attempt deadline (bounded, no loop)', async () => {
    const agent = await h.agentWith(holdingSendHandlers(1_000));
    const clock = alwaysStalledAfterMark(1_500);
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, { now: clock.now, reconcileIntervalMs: 300 });
    const { id } = await producer.startWorkflow({ workflowId: `${prefix}-w`, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'book' }, attemptDeadlineMs: 12_000 }] });
    const record = await finished(producer, id, 40_000);
    expect(agent.count('SendMessage')).toBe(0);
    expect(record.error?.code).toBe('DEADLINE_EXCEEDED');
    // Every mark given back: none counted as a send, no resend used up.
    expect(record.sendCount).toBe(0);
    expect(record.resendCount).toBe(0);
    // Bounded: each guard's stall moved the clock 1.5 s toward the 12 s deadline.
    expect(clock.guards()).toBeLessThanOrEqual(12);
  }, 60_000);

  it('a worker process stalled 5 s after its mark (its job lock and send lease run out, a peer runs the job and the reconciler resends), then wakes: one SendMessage', async () => {
    const agent = await h.agentWith(holdingSendHandlers(6_000));
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    const stalled = spawnWorkerProcess({ REDIS_URL: h.redisServer().url, DA2A_PREFIX: prefix, DA2A_STALL_AT: 'send.after-mark:5000', DA2A_LIVENESS_TTL_MS: '1000' });
    try {
      await stalled.ready;
      const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `${prefix}-1` });
      await eventually(async () => (await recordOf(producer, id))?.sendStartedAt !== undefined, 'marked by the stalled worker', 10_000);
      await h.fleetFor(prefix, { reconcileIntervalMs: 300, livenessTtlMs: 1_000 });
      const record = await finished(producer, id, 40_000);
      expect({ state: record.state, sendMessages: agent.count('SendMessage') }).toEqual({ state: 'COMPLETED', sendMessages: 1 });
    } finally {
      await stalled.kill();
    }
  }, 60_000);
});

describe('attack33b: stream order with skewed stamps', () => {
  it('a question asked on the stream after a snapshot stamped ahead survives the parked reads stamped between them; COMPLETED then stays', async () => {
    const question = (contextId?: string) => agentMessage('one room or two?', { messageId: 'q1', taskId: 'T1', contextId });
    const { producer: p, agent, seen } = await h.setUp((seen) => ({
      SubscribeToTask: (_params, call) =>
        call.count === 1
          ? { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(60) })), ev(SU('INPUT_REQUIRED', { contextId: seen.contextId, timestamp: h.at(1), message: question(seen.contextId) }))], endAfter: 'close' }
          : { sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(30) }))], endAfter: 'hang' },
      // A lagging replica: the task WORKING, stamped between the two.
      GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(30) }) }),
    }));
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'rooms', idempotencyKey: `${h.counter()}-order` });
    await eventually(async () => (await recordOf(p, id))?.state === 'INPUT_REQUIRED', 'the question journaled', 15_000);
    const reads = agent.count('GetTask');
    await eventually(async () => agent.count('GetTask') > reads, 'the parked task read again', 20_000);
    expect((await recordOf(p, id))!.state).toBe('INPUT_REQUIRED');
    expect(await p.questions(id)).toHaveLength(1);
    // The agent finishes; a late WORKING (GetTask, any stamp) never takes it back.
    agent.script({ GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: h.at(2), artifacts: { a1: 'two rooms' } }) }) });
    await p.reply(id, 'two').catch(() => undefined);
    const done = await finished(p, id, 30_000);
    expect(done.state).toBe('COMPLETED');
    agent.script({ GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId, timestamp: h.at(600) }) }) });
    expect((await recordOf(p, id))!.state).toBe('COMPLETED');
    // Our message once, and our reply to the question once (it names the task).
    expect(agent.calls('SendMessage').map((call) => call.params.message.taskId ?? 'message')).toEqual(['message', 'T1']);
  }, 60_000);
});

describe('attack33b: the push webhook', () => {
  it('forged, cross-delegation, foreign-task, before-bound, oversized and replayed pushes change nothing they must not', async () => {
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    const app = startTestServer({ redisUrl: h.redisServer().url, prefix });
    try {
      await app.ready();
      const start = async (name: string, bound: boolean) => {
        const workflowId = `${prefix}-${name}`;
        await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: `http://127.0.0.1:9/${workflowId}`, message: { text: 'go' }, push: true }] });
        if (bound) await applyTask(producer.journal, ref(workflowId), { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } }, { snapshot: true });
        return { workflowId, secret: (await producer.journal.pushToken(ref(workflowId)))! };
      };
      const post = (workflowId: string, headers: Record<string, string>, payload: unknown) =>
        app.inject({ method: 'POST', url: `/v1/push/${workflowId}/main.1`, headers: { 'content-type': 'application/a2a+json', ...headers }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });
      const completed = (taskId: string, text: string) => ({ task: { id: taskId, contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() }, artifacts: [{ artifactId: 'a1', parts: [{ text }] }] } });
      // Two tenants whose agents both call their task T1.
      const x = await start('x', true);
      const y = await start('y', true);
      const intent = await start('intent', false);
      const yBefore = (await recordOf(producer, y.workflowId))!;

      // Forged: a wrong bearer, a right token beside a wrong bearer, X's token on Y's URL.
      expect((await post(x.workflowId, { authorization: 'Bearer nope' }, completed('T1', 'forged'))).statusCode).toBe(401);
      expect((await post(x.workflowId, { authorization: 'Bearer nope', 'x-a2a-notification-token': x.secret }, completed('T1', 'forged'))).statusCode).toBe(401);
      expect((await post(y.workflowId, { authorization: `Bearer ${x.secret}` }, completed('T1', 'cross'))).statusCode).toBe(401);
      // X's token naming a task X is not bound to: never X's result.
      await post(x.workflowId, { authorization: `Bearer ${x.secret}` }, completed('T-other', 'foreign'));
      expect((await recordOf(producer, x.workflowId))!.state).toBe('WORKING');
      // Before the task is bound: a pushed COMPLETED Task settles nothing (the send's answer or a search binds first).
      await post(intent.workflowId, { authorization: `Bearer ${intent.secret}` }, completed('T9', 'early'));
      expect((await recordOf(producer, intent.workflowId))!.state).toBe('INTENT');
      // Over the body limit: refused, nothing applied.
      const huge = await post(x.workflowId, { authorization: `Bearer ${x.secret}` }, JSON.stringify(completed('T1', 'x'.repeat(12 * 1024 * 1024))));
      expect(huge.statusCode).toBe(413);
      expect((await recordOf(producer, x.workflowId))!.state).toBe('WORKING');
      // X's own result, then replays and a late WORKING: COMPLETED stays, the version does not move.
      expect((await post(x.workflowId, { authorization: `Bearer ${x.secret}` }, completed('T1', 'x done'))).statusCode).toBeLessThan(300);
      const done = (await recordOf(producer, x.workflowId))!;
      expect(done.state).toBe('COMPLETED');
      await post(x.workflowId, { authorization: `Bearer ${x.secret}` }, completed('T1', 'x done'));
      await post(x.workflowId, { authorization: `Bearer ${x.secret}` }, { statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING', timestamp: new Date(Date.now() + 60_000).toISOString() } } });
      expect((await recordOf(producer, x.workflowId))!).toMatchObject({ state: 'COMPLETED', version: done.version });
      // Y, the other tenant's T1, untouched by all of it.
      expect((await recordOf(producer, y.workflowId))!).toMatchObject({ state: 'WORKING', version: yBefore.version });
    } finally {
      await app.close();
    }
  }, 60_000);
});

describe('attack33b: Redis away between the mark and the request', () => {
  const aof = useRedisServer({ appendOnly: true });
  for (const how of ['restart', 'kill'] as const) {
    it(`redis-server ${how === 'kill' ? 'SIGKILLed and started again from its AOF' : 'restarted'} as the sender's stall guard fires: one SendMessage, COMPLETED`, async () => {
      // The agent lists what it holds: when Redis is away before the give-back is written (the CI's timing), the row
      // stays marked and the reconciler's search decides; the agent that never got our message lists nothing, so the
      // search proves it absent and resends (without ListTasks: 'unsupported', a person, AMBIGUOUS).
      const held: unknown[] = [];
      const agent = await startScriptedAgent({
        SendMessage: (params: any) => {
          const booked = task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked' } });
          held.push(booked);
          return { result: { task: booked } };
        },
        ListTasks: () => ({ result: { tasks: held, nextPageToken: '', pageSize: 50, totalSize: held.length } }),
        GetTask: () => (held.length > 0 ? { result: held[0] } : { error: { code: -32001, message: 'Task not found' } }),
      });
      const prefix = `aof-${how}`;
      const producer = createProducer({ redis: aof().url, prefix, addressPolicy: { allowLoopback: true } });
      // The first stall guard's read: the host stalled 1.5 s after the mark, and Redis goes away right then.
      let skew = 0;
      let away: Promise<void> | undefined;
      const now = () => {
        if (away === undefined && /\brequestReady\b/.test(new Error().stack ?? '')) {
          skew = 1_500;
          away = how === 'kill' ? aof().kill().then(() => aof().restart()) : aof().restart();
        }
        return Date.now() + skew;
      };
      const fleet = await startTestFleet({ redisUrl: aof().url, prefix, now, reconcileIntervalMs: 300 });
      try {
        const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `${prefix}-1` });
        await eventually(async () => away !== undefined, 'the stall guard fired', 10_000);
        await away;
        const record = await finished(producer, id, 45_000);
        expect(record.state).toBe('COMPLETED');
        expect(agent.count('SendMessage')).toBe(1);
      } finally {
        await fleet.close();
        await producer.close();
        await agent.close();
      }
    }, 70_000);
  }
});
