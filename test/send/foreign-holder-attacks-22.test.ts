/**
 * Red team 22: the push route's suspects (`suspectOf`, `noteSuspect`) under other spellings, other routes, oversized
 * ids, a flood over the pending cap, bad input and a Redis that refuses writes. Tests marked `it.fails` are findings.
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually } from '../harness/fleet.ts';
import { getTaskCalls, pushScene as pushedScene } from '../harness/push-scene.ts';
import { startScriptedAgent, taskEvent, type ScriptedHandlers } from '../harness/scripted-agent.ts';
import { createProducer } from '@durable-a2a/producer';
import { startTestFleet } from '../harness/fleet.ts';
import { finishedAttempt, holder, listing, personNaming, receivedOf, type Received } from '../harness/holders.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;

/** The harness's pushed scene (test/harness/push-scene.ts) on this file's redis-server. */
const pushScene = (getTask: (taskId: string, received: Received) => unknown) => pushedScene({ redisUrl: redisServer().url, keep }, getTask);

/** The agent's honest GetTask: every task holds our message. */
const everyHolds = (taskId: string, received: Received) => holder(taskId, 'WORKING', received);

describe('another spelling: the 0.3 wire shape and a message only in a status', () => {
  it('a 0.3 Task (kind fields, role "user", state "working") for T2 holding our message: AMBIGUOUS naming T1 and T2', async () => {
    const { push, messageId, env, workflowId, agent, contextId } = await pushScene(everyHolds);
    const status = await push({ kind: 'task', id: 'T2', contextId: contextId(), status: { state: 'working' }, history: [{ kind: 'message', role: 'user', messageId, parts: [{ kind: 'text', text: 'go' }] }] });
    expect(status).toBe(403);
    await personNaming(env.producer, workflowId, ['T1', 'T2'], 30_000);
    expect(getTaskCalls(agent, 'T2')).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('a 1.0 status update for T2 whose status message (role ROLE_USER) quotes our messageId: AMBIGUOUS naming T1 and T2', async () => {
    const { push, messageId, env, workflowId, contextId } = await pushScene(everyHolds);
    const status = await push({ statusUpdate: { taskId: 'T2', contextId: contextId(), status: { state: 'TASK_STATE_WORKING', message: { role: 'ROLE_USER', messageId, parts: [{ text: 'go' }] } } } });
    expect(status).toBe(403);
    await personNaming(env.producer, workflowId, ['T1', 'T2'], 30_000);
  }, 60_000);

  it('a 0.3 status-update (kind "status-update", final false) for T2 whose status message quotes our messageId: AMBIGUOUS naming T1 and T2', async () => {
    const { push, messageId, env, workflowId, contextId } = await pushScene(everyHolds);
    const status = await push({ kind: 'status-update', taskId: 'T2', contextId: contextId(), final: false, status: { state: 'working', message: { kind: 'message', role: 'user', messageId, parts: [{ kind: 'text', text: 'go' }] } } });
    expect(status).toBe(403);
    await personNaming(env.producer, workflowId, ['T1', 'T2'], 30_000);
  }, 60_000);
});

describe('another route: our messageId only in a status message or a pushed Message', () => {
  it('a 1.0 Task T2 without history whose status message (ROLE_USER) is ours: AMBIGUOUS naming T1 and T2', async () => {
    const { push, messageId, env, workflowId, contextId } = await pushScene(everyHolds);
    expect(await push({ task: { id: 'T2', contextId: contextId(), status: { state: 'TASK_STATE_INPUT_REQUIRED', message: { role: 'ROLE_USER', messageId, parts: [{ text: 'go' }] } } } })).toBe(403);
    await personNaming(env.producer, workflowId, ['T1', 'T2'], 30_000);
  }, 60_000);

  it('a pushed 0.3 Message (kind "message", role "user") with our messageId and taskId T2: AMBIGUOUS naming T1 and T2', async () => {
    const { push, messageId, env, workflowId, contextId } = await pushScene(everyHolds);
    expect(await push({ kind: 'message', role: 'user', messageId, taskId: 'T2', contextId: contextId(), parts: [{ kind: 'text', text: 'go' }] })).toBe(403);
    await personNaming(env.producer, workflowId, ['T1', 'T2'], 30_000);
  }, 60_000);
});

describe('another route: our task id with another context', () => {
  it('a Task T1 pushed COMPLETED with artifacts in another contextId: refused (403), not applied, the row still WORKING, no suspect', async () => {
    const { push, record, messageId } = await pushScene(everyHolds);
    const status = await push({ task: { id: 'T1', contextId: 'C-other', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'a', parts: [{ text: 'forged' }] }], history: [{ role: 'ROLE_USER', messageId, parts: [{ text: 'go' }] }] } });
    expect(status).toBe(403);
    const row = await record();
    expect(row.state).toBe('WORKING');
    expect((row as any).suspects ?? '').toBe('');
  }, 60_000);
});

describe('oversized suspect ids', () => {
  it('a suspect id of exactly 1,024 characters holding our message is read and named: AMBIGUOUS', async () => {
    const { push, messageId, env, workflowId, agent, contextId } = await pushScene(everyHolds);
    const long = 'T'.repeat(1_024);
    expect(await push({ task: { id: long, contextId: contextId(), status: { state: 'TASK_STATE_WORKING' }, history: [{ role: 'ROLE_USER', messageId, parts: [{ text: 'go' }] }] } })).toBe(403);
    await eventually(async () => getTaskCalls(agent, long) >= 1, 'the 1,024-char suspect read', 30_000);
    // Named for a person clipped at TASK_ID_CHARS (128) with an ellipsis (policy.ts namedTask): by design.
    const row = await personNaming(env.producer, workflowId, ['T1', `${long.slice(0, 128)}…`], 30_000);
    expect(row.taskId).toBe('T1');
  }, 60_000);

  // attack22: a task id of 1,025 characters whose push shows our message was silently dropped (suspectOf returned
  // undefined, counted as a plain 'foreign-task'); if the agent held our message in it, nothing ever read it and the
  // row stayed WORKING on T1. Now the journal counts it as evidence lost (too long to keep) and a person decides.
  it('a suspect id of 1,025 characters holding our message: not kept, counted lost, AMBIGUOUS for a person (before: dropped, never read, row WORKING)', async () => {
    const { push, messageId, record, contextId } = await pushScene(everyHolds);
    const long = 'T'.repeat(1_025);
    expect(await push({ task: { id: long, contextId: contextId(), status: { state: 'TASK_STATE_WORKING' }, history: [{ role: 'ROLE_USER', messageId, parts: [{ text: 'go' }] }] } })).toBe(403);
    const row = await eventually(async () => ((await record()).state === 'AMBIGUOUS' ? record() : undefined), 'the 1,025-char holder surfaced', 20_000);
    expect(row.taskId).toBe('T1');
    expect(row.error?.message).toContain('1 other task we could not read');
    expect(row.error?.message).toContain('T1');
  }, 60_000);
});

describe('ids over the wire bound (1 KiB) in a push: an answer over a limit, never dropped as unreadable', () => {
  // edges35 bounded every id an agent sends to 1 KiB (the body became unreadable, 400, nothing journaled): the suspect
  // above was dropped again, and a push of our own task naming a longer artifact id was read as nothing happened. Now
  // (`refusedOverLongId`) another task holding ours is a suspect too long to keep, and our own task's push is a refused
  // part of the result: a full read decides.
  for (const [what, body] of [
    ['an artifact update of T1 whose artifactId is 1,025 characters', (contextId: string) => ({ artifactUpdate: { taskId: 'T1', contextId, artifact: { artifactId: 'a'.repeat(1_025), parts: [{ text: 'booked' }] } } })],
    ['a Task T1 COMPLETED whose artifact id is 2,000 characters', (contextId: string) => ({ task: { id: 'T1', contextId, status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'b'.repeat(2_000), parts: [{ text: 'booked' }] }] } })],
    ['a 0.3 Task T1 (kind "task") whose contextId is 1,100 characters', () => ({ kind: 'task', id: 'T1', contextId: 'c'.repeat(1_100), status: { state: 'completed' } })],
  ] as const) {
    it(`${what}: 413, journaled as a refused part of the result (limit wireIdBytes), the workers read T1`, async () => {
      const { push, record, contextId, agent } = await pushScene(everyHolds);
      const readsBefore = getTaskCalls(agent, 'T1');
      expect(await push(body(contextId()))).toBe(413);
      expect((await record()).refusedResult).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'wireIdBytes', delivery: 'received' });
      await eventually(async () => getTaskCalls(agent, 'T1') > readsBefore, 'the workers read T1 after the refused push', 20_000);
      expect((await record()).state).not.toBe('COMPLETED');
    }, 60_000);
  }
});

describe('9 distinct suspects in one second', () => {
  async function nineInOneSecond() {
    const scene = await pushScene((taskId, received) =>
      taskId === 'T2' || taskId === 'T1' ? holder(taskId, 'WORKING', received) : holder(taskId, 'WORKING', { ...received, messageId: 'M-other' }));
    const body = (id: string) => ({ task: { id, contextId: scene.contextId(), status: { state: 'TASK_STATE_WORKING' }, history: [{ role: 'ROLE_USER', messageId: scene.messageId, parts: [{ text: 'go' }] }] } });
    await eventually(async () => Date.now() % 1000 < 200, 'the start of a second', 5_000, 5);
    const statuses = await Promise.all(Array.from({ length: 8 }, (_, n) => scene.push(body(`D${n}`))));
    statuses.push(await scene.push(body('T2')));
    expect(statuses).toEqual(Array(9).fill(403));
    return scene;
  }

  // attack22: 8 decoy pushes filled the pending cap (8), then the push naming T2 (which the agent's own GetTask shows
  // holding our message) was 'over-cap': counted in the row, never kept or read. Now the journal keeps up to
  // SUSPECTS_PENDING_MAX waiting and the reconciler drains them SUSPECT_READS_PER_JOB a job: T2 is read by the next job.
  it('8 decoys then the real holder T2 within one second: every decoy read, T2 read by the next job, AMBIGUOUS naming T1 and T2', async () => {
    const { env, workflowId, agent } = await nineInOneSecond();
    const row = await personNaming(env.producer, workflowId, ['T1', 'T2'], 30_000);
    expect(row.taskId).toBe('T1');
    expect(Array.from({ length: 8 }, (_, n) => getTaskCalls(agent, `D${n}`)).every((c) => c >= 1)).toBe(true);
    expect(getTaskCalls(agent, 'T2')).toBeGreaterThanOrEqual(1);
  }, 90_000);
});

describe('bad API input to the push webhook', () => {
  it('null, an array, a number, a string, invalid JSON, a Task without id, an id of the wrong type, a text/plain body: 400/415, never 5xx, nothing changed', async () => {
    const { raw, record } = await pushScene(everyHolds);
    const before = await record();
    const bodies: [string, string?][] = [
      ['null'], ['[]'], ['42'], ['"x"'], ['{'], ['{"task":{}}'], ['{"task":{"id":7,"status":{"state":"TASK_STATE_WORKING"}}}'],
      ['{"statusUpdate":{"taskId":"T2","status":{"state":"TASK_STATE_WORKING","message":{"role":"ROLE_USER","messageId":{"x":1},"parts":[]}}}}'],
      ['{"task":{"id":"T2","status":{"state":"TASK_STATE_WORKING"},"history":"not-an-array"}}'],
      ['{"task":{"id":"T2"}}'], ['{"task":null}'], ['{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}],"taskId":{"a":1}}}'],
      ['{}', 'text/plain'],
    ];
    const observed: Record<string, number> = {};
    for (const [body, type] of bodies) observed[body] = (await raw(body, type)).status;
    expect(Object.entries(observed).filter(([, status]) => status < 400 || status >= 500)).toEqual([]);
    expect((await record()).state).toBe(before.state);
  }, 60_000);
});

describe('Redis refusing writes while a suspect push arrives', () => {
  // Expected: a retryable answer (5xx / 503), so an agent that retries delivers the news again once Redis accepts
  // writes; not a 403 (which tells the agent the push is not ours, not to retry) and not a hung request.
  it('min-replicas-to-write refuses every write: the push answers 5xx, and the same push once writes resume is read (AMBIGUOUS naming T1 and T2)', async () => {
    const { push, messageId, env, workflowId, contextId } = await pushScene(everyHolds);
    const admin = new Redis(redisServer().url);
    const body = { task: { id: 'T2', contextId: contextId(), status: { state: 'TASK_STATE_WORKING' }, history: [{ role: 'ROLE_USER', messageId, parts: [{ text: 'go' }] }] } };
    let refused: number;
    try {
      await admin.config('SET', 'min-replicas-to-write', '1');
      refused = await push(body);
    } finally {
      await admin.config('SET', 'min-replicas-to-write', '0');
      await admin.quit();
    }
    expect(refused).toBe(503); // observed: 503 (the journal write before noteSuspect, noteProtocolError, is refused first)
    expect(await push(body)).toBe(403);
    await personNaming(env.producer, workflowId, ['T1', 'T2'], 30_000);
  }, 60_000);
});

/** A delegation (no push) to an agent answering `handlers`; the producer and a fleet on a fresh prefix. */
async function scene(handlers: (received: () => Received | undefined, record: (params: any) => Received) => ScriptedHandlers) {
  const prefix = `atk22s-${++counter}-${Date.now()}`;
  const seen: { received?: Received } = {};
  const agent = await startScriptedAgent(handlers(() => seen.received, (params) => (seen.received ??= receivedOf(params))));
  const [producer, fleet] = [createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } }), await startTestFleet({ redisUrl: redisServer().url, prefix })];
  keep(producer, agent, fleet);
  return { agent, producer, id: (await producer.delegate({ agent: agent.cardUrl, text: 'book it', idempotencyKey: `${prefix}-key` })).id };
}

/** Our message as the agent echoes it in a status message (no history kept: historyLength 0, or an agent without one). */
const ourStatus = (received: Received) => ({ role: 'ROLE_USER', messageId: received.messageId, parts: [{ text: 'book it' }] });

describe('our messageId only in the status message of the task the agent reads back', () => {
  // attack22 (fixed in foreignHolder): the push route's suspectOf counts a Task's status message as holding our message, but the
  // reader's foreignHolder (search-row.ts) looks in task.history only. A push of T2 whose status message is ours is
  // read by GetTask; the agent's own read of T2 shows our message in its status message (no history): nothing is
  // decided, the row stays WORKING on T1. The two rules disagree on the same evidence. Expected: AMBIGUOUS naming both.
  it('push route: T2 pushed and read back with our message only in status.message: AMBIGUOUS naming T1 and T2', async () => {
    const { push, messageId, env, workflowId, contextId, agent } = await pushScene((taskId, received) =>
      taskId === 'T1' ? holder('T1', 'WORKING', received) : holder(taskId, 'INPUT_REQUIRED', received, false, { status: ourStatus(received) }));
    expect(await push({ task: { id: 'T2', contextId: contextId(), status: { state: 'TASK_STATE_INPUT_REQUIRED', message: { role: 'ROLE_USER', messageId, parts: [{ text: 'go' }] } } } })).toBe(403);
    await eventually(async () => getTaskCalls(agent, 'T2') >= 1, 'T2 read by GetTask', 20_000);
    await personNaming(env.producer, workflowId, ['T1', 'T2'], 20_000);
  }, 60_000);

  // attack22 (fixed in foreignHolder): GetTask of our T1 answered with T2 whose status message (not history) is our message: not a
  // foreign holder (history only), so FOREIGN_TASK as for any other task; our T1 is then followed and settles
  // COMPLETED, T2 (which shows our message) never surfaced. Expected: AMBIGUOUS naming T1 and T2, as with history.
  it('GetTask of T1 answers T2 whose status message is ours (no history): AMBIGUOUS naming T1 and T2', async () => {
    const { producer, id, agent } = await scene((received, record) => ({
      SendMessage: (params) => ({ result: { task: holder('T1', 'WORKING', record(params)) } }),
      SubscribeToTask: (_params, call) => ({ sse: [taskEvent(holder('T1', call.count === 1 ? 'WORKING' : 'COMPLETED', received()!))] }),
      GetTask: () => ({ result: holder('T2', 'INPUT_REQUIRED', received()!, false, { status: ourStatus(received()!) }) }),
      ListTasks: () => listing([holder('T1', 'WORKING', received()!)]),
    }));
    const row = await finishedAttempt(producer, id, 30_000);
    expect(agent.count('GetTask')).toBeGreaterThanOrEqual(1);
    expect(row.state).toBe('AMBIGUOUS');
  }, 60_000);
});
