/**
 * Attacks on local follows (delegation/follow-local.ts) with hostile agents (scripted raw JSON-RPC agent,
 * real fleet, private redis-server): whatever the agent's stream does after our task reached a terminal
 * state, the workflow finishes, with one SendMessage, and its compacted record never changes again.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import { queuePrefix } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { AU, SU, ev, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle, type SseWait } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
let producer: Producer | undefined;
let fleet: Fleet | undefined;
let agent: ScriptedAgentHandle | undefined;
let counter = 0;
/** A plain client of the test's Redis (key listings). */
const redis = useRedisClient<Redis>(redisServer);

closeAfterEach(
  () => ({ fleet, agent, producer }),
  () => void (fleet = agent = producer = undefined),
);

/** Starts agent, producer and fleet under a fresh prefix; the agent answers SendMessage with task T1 in our context. */
async function setUp(handlers: Parameters<typeof startScriptedAgent>[0], fleetOptions: Partial<Parameters<typeof startTestFleet>[0]> = {}) {
  const prefix = `attack-local-${++counter}`;
  agent = await startScriptedAgent({
    SendMessage: (params) => ({ result: { task: task('T1', 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } }),
    GetTask: () => ({ result: task('T1', 'COMPLETED', { artifacts: { a1: 'done' } }) }),
    ...handlers,
  });
  producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, ...fleetOptions });
  return { prefix, producer, fleet, agent };
}

/**
 * A reconcile interval longer than the test (the workflow's own check, `*`, comes due only with it) and a
 * lease renewed every second: each renewal moves the delegation's next check at least half an interval
 * ahead, so only the follow itself can settle the delegation within the test (as in production, where a
 * lease renewed every 10 s keeps a 30 s reconcile interval away for as long as the stream lives).
 */
const RENEWING = { reconcileIntervalMs: 60_000, lockDurationMs: 3_000 };

/** Events every `everyMs` for `count` times (far longer than the test waits), then the stream hangs open. */
const forever = (event: () => string, everyMs: number, count = 400): (string | SseWait)[] => Array.from({ length: count }, () => [{ waitMs: everyMs }, event()]).flat();

describe.each([
  { slots: 'local follows (default slots)', options: {} },
  { slots: 'follow jobs only (localFollowSlots 0)', options: { localFollowSlots: 0 } },
])('a stream that goes on after our task is terminal: $slots', ({ options }) => {
  it('late artifacts and status updates every 100 ms after COMPLETED: the workflow still completes, one SendMessage', async () => {
    const { producer } = await setUp({
      SubscribeToTask: () => ({
        sse: [taskEvent(task('T1', 'WORKING')), ev(AU('a1', false, true, 'done')), ev(SU('COMPLETED')), ...forever(() => ev(AU(`late-${Math.random()}`, false, true, 'late')), 100)],
        endAfter: 'hang',
      }),
    }, { ...RENEWING, ...options });
    const { id } = await producer.delegate({ agent: agent!.cardUrl, text: 'go', idempotencyKey: 'late-events' });
    const view = await eventually(async () => {
      const current = await producer.get(id);
      return current.state === 'COMPLETED' && current;
    }, 'workflow COMPLETED while the agent keeps streaming', 15_000);
    expect(view.steps[0]!.attempts[0]!.resultText).toBe('done');
    expect(agent!.count('SendMessage')).toBe(1);
  }, 30_000);
});

/** What a hostile agent may send after our task's terminal update, forever. */
const afterTerminal = (taskId: string, contextId: string) => ({
  lateArtifact: () => ev(AU(`late-${Math.random()}`, false, true, 'late', { taskId, contextId })),
  appendToSealed: () => ev(AU('a1', true, true, ' and more', { taskId, contextId })),
  regress: () => ev(SU('WORKING', { taskId, contextId, timestamp: new Date().toISOString() })),
  otherTerminal: () => ev(SU('FAILED', { taskId, contextId, timestamp: new Date().toISOString() })),
  resentTask: () => taskEvent(task(taskId, 'COMPLETED', { contextId, artifacts: { a1: 'changed' } })),
  foreignTask: () => ev(SU('WORKING', { taskId: 'someone-else', contextId })),
  keepAlive: () => ': ping\n\n',
});
type AfterTerminal = keyof ReturnType<typeof afterTerminal>;

describe('property: whatever follows the terminal update', () => {
  it('every delegation completes with its own result, one SendMessage each, and its compacted record never changes', async () => {
    const kinds = Object.keys(afterTerminal('', '')) as AfterTerminal[];
    const plans = fc.sample(fc.array(fc.constantFrom(...kinds), { minLength: 1, maxLength: 4 }), { numRuns: 12, seed: Number(process.env.FUZZ_SEED ?? 5) });
    const planOf = new Map<string, AfterTerminal[]>();
    const { producer, prefix } = await setUp(
      {
        SendMessage: (params) => ({ result: { task: task(`T-${params.message.messageId}`, 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } }),
        SubscribeToTask: (params) => {
          const [plan, contextId] = [planOf.get(params.id) ?? ['keepAlive' as const], `C-${params.id}`];
          const events = afterTerminal(params.id, contextId);
          const final = [taskEvent(task(params.id, 'WORKING', { contextId })), ev(AU('a1', false, true, `done ${params.id}`, { taskId: params.id, contextId })), ev(SU('COMPLETED', { taskId: params.id, contextId }))];
          return { sse: [...final, ...forever(() => events[plan[Math.floor(Math.random() * plan.length)]!](), 50)], endAfter: 'hang' };
        },
        GetTask: (params) => ({ result: task(params.id, 'COMPLETED', { contextId: `C-${params.id}`, artifacts: { a1: `done ${params.id}` } }) }),
      },
      RENEWING,
    );
    const sent = await Promise.all(
      plans.map(async (plan, index) => {
        const created = await producer.delegate({ agent: agent!.cardUrl, text: `go ${index}`, idempotencyKey: `plan-${index}` });
        planOf.set(`T-${created.messageId}`, plan);
        return { ...created, plan };
      }),
    );
    for (const { id, messageId, plan } of sent) {
      const view = await eventually(async () => {
        const current = await producer.get(id);
        return current.state === 'COMPLETED' && current;
      }, `workflow ${id} COMPLETED (after the terminal update: ${plan.join(', ')})`, 15_000);
      expect(view.steps[0]!.attempts[0]!.resultText).toBe(`done T-${messageId}`);
      expect(agent!.calls('SendMessage').filter((call) => call.params.message.messageId === messageId)).toHaveLength(1);
      // Compacted, lease released: one key, and later events (none should come) change nothing.
      const done = producer.journal.keys.finished(id);
      await eventually(async () => (await redis().keys(`${prefix}:{wf:${id}}:*`)).join() === done, `only ${done} left`);
      const text = await redis().get(done);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await redis().get(done)).toBe(text);
      expect(await redis().keys(`${prefix}:{wf:${id}}:*`)).toEqual([done]);
    }
  }, 60_000);
});

describe('an answer about another task', () => {
  it('to our reply (SendMessage on the task): nothing of it applied, a protocol error journaled, the reply job does not fail, the task followed at once', async () => {
    const question = { messageId: 'q1', role: 'ROLE_AGENT', parts: [{ text: 'which date?' }] };
    let replied = false;
    const { producer, prefix } = await setUp(
      {
        SendMessage: (params, call) =>
          call.count === 1
            ? { result: { task: task('T1', 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } }
            : ((replied = true), { result: { task: task('T-OTHER', 'WORKING') } }),
        SubscribeToTask: () => ({ sse: replied ? [taskEvent(task('T1', 'COMPLETED', { artifacts: { a1: 'done' } }))] : [taskEvent(task('T1', 'INPUT_REQUIRED', { message: question }))], endAfter: 'close' }),
        GetTask: () => ({ result: replied ? task('T1', 'COMPLETED', { artifacts: { a1: 'done' } }) : task('T1', 'INPUT_REQUIRED', { message: question }) }),
      },
      // Only the reply's own routing can follow the task within the test: the parked poll is far away.
      { parkedPollMs: 60_000, reconcileIntervalMs: 60_000 },
    );
    const { id } = await producer.delegate({ agent: agent!.cardUrl, text: 'go', idempotencyKey: 'reply-foreign' });
    await eventually(async () => (await producer.questions(id)).length > 0, 'the question is open');
    await producer.reply(id, 'monday');
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => (await producer.get(id)).state === 'COMPLETED', 'workflow COMPLETED after the reply', 15_000);
    expect((await producer.journal.getDelegation(ref))!.protocolError?.code).toBe('FOREIGN_TASK');
    const send = new Queue('send', { connection: redis(), prefix: queuePrefix(prefix) });
    try {
      expect(await send.getJobCountByTypes('failed')).toBe(0);
    } finally {
      await send.close();
    }
    expect(agent!.count('SendMessage')).toBe(2);
  }, 30_000);


  it('to our CancelTask (and the GetTask after its refusal): a protocol error is journaled, nothing applied, no send job fails', async () => {
    const { producer, prefix } = await setUp({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING')), ...forever(() => ': ping\n\n', 500, 60)], endAfter: 'hang' }),
      CancelTask: () => ({ result: task('T-OTHER', 'CANCELED') }),
      GetTask: () => ({ result: task('T1', 'WORKING') }),
    });
    const { id } = await producer.delegate({ agent: agent!.cardUrl, text: 'go', idempotencyKey: 'cancel-foreign' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => (await producer.journal.getDelegation(ref))?.state === 'WORKING', 'the task is WORKING');
    await producer.cancel(id);
    await eventually(async () => agent!.count('CancelTask') >= 1, 'CancelTask sent', 15_000);
    const send = new Queue('send', { connection: redis(), prefix: queuePrefix(prefix) });
    try {
      const record = await eventually(async () => {
        const current = await producer.journal.getDelegation(ref);
        return current?.protocolError && current;
      }, 'the foreign answer journaled as a protocol error', 10_000);
      expect(record).toMatchObject({ state: 'WORKING', taskId: 'T1', protocolError: { code: 'FOREIGN_TASK' } });
      expect(await send.getJobCountByTypes('failed')).toBe(0);
    } finally {
      await send.close();
    }
  }, 30_000);

  it('to GetTask while parked on a question: the question stays, the answer is journaled as a protocol error, no reconcile job fails', async () => {
    const question = { messageId: 'q1', role: 'ROLE_AGENT', parts: [{ text: 'which date?' }] };
    const { producer, prefix } = await setUp({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'INPUT_REQUIRED', { message: question }))], endAfter: 'close' }),
      GetTask: () => ({ result: task('T-OTHER', 'WORKING') }),
    }, { parkedPollMs: 300 });
    const { id } = await producer.delegate({ agent: agent!.cardUrl, text: 'go', idempotencyKey: 'parked-foreign' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => agent!.count('GetTask') >= 3, 'the parked delegation re-read three times', 15_000);
    const record = await producer.journal.getDelegation(ref);
    expect(record).toMatchObject({ state: 'INPUT_REQUIRED', taskId: 'T1' });
    expect(record!.question?.parts[0]?.text).toBe('which date?');
    expect(record!.protocolError?.code).toBe('FOREIGN_TASK');
    const reconcile = new Queue('reconcile', { connection: redis(), prefix: queuePrefix(prefix) });
    try {
      expect(await reconcile.getJobCountByTypes('failed')).toBe(0);
      expect(fleet!.metrics).toBeDefined();
    } finally {
      await reconcile.close();
    }
  }, 30_000);
});

describe('a compacted workflow delegated again with its idempotency key', () => {
  it('creates nothing: the same id, its one key unchanged, and the index entries the create wrote ahead are swept away', async () => {
    const { producer, prefix, fleet } = await setUp({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'COMPLETED', { artifacts: { a1: 'done' } }))], endAfter: 'close' }),
    });
    const first = await producer.delegate({ agent: agent!.cardUrl, text: 'go', idempotencyKey: 'again' });
    const done = producer.journal.keys.finished(first.id);
    await eventually(async () => (await redis().keys(`${prefix}:{wf:${first.id}}:*`)).join() === done, 'compacted, lease released');
    const text = await redis().get(done);
    const again = await producer.delegate({ agent: agent!.cardUrl, text: 'go', idempotencyKey: 'again' });
    expect(again).toMatchObject({ id: first.id, created: false });
    await fleet.sweepAll();
    const ref = { workflowId: first.id, delegationId: 'main.1' };
    await eventually(async () => (await producer.journal.nextCheckAt(ref)) === undefined && (await producer.journal.nextCheckAt({ ...ref, delegationId: '*' })) === undefined, 'no index entry left');
    expect(await redis().keys(`${prefix}:{wf:${first.id}}:*`)).toEqual([done]);
    expect(await redis().get(done)).toBe(text);
    expect(agent!.count('SendMessage')).toBe(1);
  }, 30_000);
});

describe('a stale index entry of a compacted workflow with many attempts', () => {
  it('is settled from its row and one attempt: the reconciler never reads the whole record once per attempt', async () => {
    const { producer, fleet } = await setUp({}, { reconcileIntervalMs: 60_000 });
    const journal = producer.journal;
    const id = 'many-attempts';
    const steps = ['s0', 's1', 's2', 's3', 's4'];
    const definition = JSON.stringify({ workflowId: id, steps: steps.map((name) => ({ name, agent: agent!.cardUrl, message: { text: 'go' } })), maxAttemptsPerStep: 20 });
    const attempts = steps.flatMap((step) => Array.from({ length: 20 }, (_, index) => ({ step, attempt: index + 1 })));
    const intentOf = ({ step, attempt }: { step: string; attempt: number }) => ({
      ...{ workflowId: id, delegationId: `${step}.${attempt}`, step, kind: 'step', attempt: String(attempt), agentCardUrl: agent!.cardUrl, messageId: `m-${step}-${attempt}` },
      ...{ state: 'INTENT', message: JSON.stringify({ parts: [{ text: 'go' }] }), createdAt: '1000', updatedAt: '1000', version: '1' },
    });
    await journal.createWorkflow(id, { state: 'RUNNING', definition, createdAt: '1000', updatedAt: '1000' }, intentOf(attempts[0]!));
    for (const attempt of attempts.slice(1)) await journal.createIntent(id, intentOf(attempt));
    // 100 attempts with 8 KB status messages: a record of about 800 KB.
    const statusMessage = { messageId: 's', role: 'ROLE_AGENT' as const, parts: [{ text: 'w'.repeat(8_000) }] };
    for (const { step, attempt } of attempts) await journal.applyStatus({ workflowId: id, delegationId: `${step}.${attempt}` }, { mode: 'outcome', state: attempt === 20 ? 'COMPLETED' : 'FAILED', statusMessage });
    await journal.updateWorkflow(id, { state: 'COMPLETED' });
    expect(await redis().exists(journal.keys.finished(id))).toBe(1);
    await journal.removeFromIndex({ workflowId: id, delegationId: '*' }, ...attempts.map(({ step, attempt }) => ({ workflowId: id, delegationId: `${step}.${attempt}` })));
    // Entries left behind (a crash between the compaction and the settle's removal, or a create written ahead).
    const refs = [{ workflowId: id, delegationId: 's4.20' }, { workflowId: id, delegationId: '*' }];
    for (const ref of refs) await journal.addToIndex(ref, Date.now());
    const output = async () => Number(/total_net_output_bytes:(\d+)/.exec(await redis().info('stats'))![1]);
    const before = await output();
    await fleet.sweepAll();
    await eventually(async () => (await Promise.all(refs.map((ref) => journal.nextCheckAt(ref)))).every((at) => at === undefined), 'both entries settled and removed', 20_000);
    // A few reads of the record at most (the attempt's own), never one per attempt (100 × 800 KB).
    expect((await output()) - before).toBeLessThan(8 * 1024 * 1024);
  }, 60_000);
});
