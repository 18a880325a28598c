/**
 * Ownership in the journal (docs/a2a-edge.md "Ownership"; RT-ownership): a task id is bound to at most one
 * delegation; a push applies only to the task id we recorded; push bodies are bounded.
 * Real redis-server, real journal scripts, the real HTTP push route, a real fleet and a raw agent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { applyTask, JournalError, type DelegationRef } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { ApiServer } from '@durable-a2a/producer/server';
import { useRedisServer } from '../harness/redis.ts';
import { eventually } from '../harness/fleet.ts';
import { startTestServer } from '../harness/api-server.ts';
import { completesTask } from '../harness/scripted-agent.ts';
import { useScriptedFleet } from '../harness/lifecycle.ts';

const redisServer = useRedisServer();
const AGENT = 'http://127.0.0.1:9/agent';

describe('pushes and bindings through the push route', () => {
  let producer: Producer;
  let app: ApiServer;
  let n = 0;
  beforeAll(async () => {
    producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix: 'wj-own' });
    app = startTestServer({ redisUrl: redisServer().url, prefix: 'wj-own' });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await producer?.close();
  });

  async function pushed(taskIdStem?: string) {
    const workflowId = `wj-own-${++n}`;
    // Task ids are per agent: every test binds its own.
    const taskId = taskIdStem && `${taskIdStem}-${n}`;
    await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: AGENT, message: { text: 'go' }, push: true }] });
    const ref = { workflowId, delegationId: 'main.1' };
    if (taskId) await applyTask(producer.journal, ref, { id: taskId, contextId: 'C1', status: { state: 'TASK_STATE_SUBMITTED' } }, { snapshot: true });
    const headers = { authorization: `Bearer ${(await producer.journal.pushToken(ref))!}`, 'content-type': 'application/json' };
    const push = (payload: unknown) => app.inject({ method: 'POST', url: `/v1/push/${workflowId}/main.1`, headers, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });
    const record = async () => (await producer.journal.getDelegation(ref))!;
    return { ref, push, record, taskId: taskId! };
  }

  it('RT-ownership (a): a push before the task id is recorded is refused, journaled, and binds nothing', async () => {
    const { push, record } = await pushed();
    const response = await push({ task: { id: 'T9', contextId: 'C9', status: { state: 'TASK_STATE_COMPLETED' } } });
    expect(response.statusCode).toBe(403);
    const after = await record();
    expect(after.taskId).toBeUndefined();
    expect(after.state).toBe('INTENT');
    expect(after.protocolError).toMatchObject({ code: 'PUSH_NOT_OURS' });
    // T9 is free: another delegation can still bind it.
    const other = await pushed();
    await applyTask(producer.journal, other.ref, { id: 'T9', contextId: 'C9', status: { state: 'TASK_STATE_SUBMITTED' } }, { snapshot: true });
    expect((await other.record()).taskId).toBe('T9');
  });

  it('a push naming another task, or our task in another context, is refused and journaled', async () => {
    const { push, record, taskId } = await pushed('T1');
    expect((await push({ statusUpdate: { taskId: 'T2', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED' } } })).statusCode).toBe(403);
    expect((await push({ task: { id: taskId, contextId: 'C-other', status: { state: 'TASK_STATE_COMPLETED' } } })).statusCode).toBe(403);
    const after = await record();
    expect(after).toMatchObject({ state: 'SUBMITTED', taskId, protocolErrorCount: 2 });
    expect((await push({ task: { id: taskId, contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'a', parts: [{ text: 'ok' }] }] } })).statusCode).toBe(204);
    expect((await record()).state).toBe('COMPLETED');
  });

  it('a push body nested 5,000 levels deep is refused before parsing (400), nothing stored', async () => {
    const { push, record, taskId } = await pushed('T1');
    const deep = `{"statusUpdate":{"taskId":"${taskId}","contextId":"C1","status":{"state":"TASK_STATE_WORKING"}},"x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const response = await push(deep);
    expect(response.statusCode).toBe(400);
    expect((await record()).state).toBe('SUBMITTED');
  });

  it('RT-ownership (b): the same task id for two delegations: the second binding is refused, typed and journaled', async () => {
    const first = await pushed('T-shared');
    const second = await pushed();
    const error = await applyTask(producer.journal, second.ref, { id: first.taskId, contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } }, { snapshot: true }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(JournalError);
    expect((error as JournalError).code).toBe('TASK_BOUND_ELSEWHERE');
    expect((await second.record()).taskId).toBeUndefined();
    expect((await second.record()).protocolError).toMatchObject({ code: 'TASK_BOUND_ELSEWHERE' });
    expect((await first.record()).taskId).toBe(first.taskId);
    // Handed to the reconciler: due now in the unfinished index.
    const due = await producer.journal.dueDelegations(Date.now() + 1, 10_000);
    expect(due).toContainEqual(second.ref);
  });
});

describe('property: random interleavings never bind one task id to two delegations', () => {
  let producer: Producer;
  let round = 0;
  beforeAll(() => {
    producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix: 'wj-own-prop' });
  });
  afterAll(async () => producer?.close());

  // `withCard`: the caller read a row without a task id and passes the Agent Card URL, so a new task id is bound with
  // the change itself (in applyStatus's script on one server); without it the script asks for a bind first (-7).
  const step = fc.record({ delegation: fc.integer({ min: 0, max: 3 }), taskId: fc.constantFrom('T1', 'T2', 'T3'), state: fc.constantFrom('SUBMITTED', 'WORKING', 'COMPLETED'), snapshot: fc.boolean(), withCard: fc.boolean() });

  it('answers, pushes and reads in any order, with any task ids', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const workflows: DelegationRef[] = [];
        round++;
        for (let index = 0; index < 4; index++) {
          const workflowId = `wj-prop-${round}-${index}`;
          // One agent for the round, so task ids collide across delegations.
          await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: `http://127.0.0.1:9/round-${round}`, message: { text: 'go' } }] });
          workflows.push({ workflowId, delegationId: 'main.1' });
        }
        await Promise.all(
          steps.map(({ delegation, taskId, state, snapshot, withCard }) =>
            applyTask(producer.journal, workflows[delegation]!, { id: taskId, contextId: 'C1', status: { state: `TASK_STATE_${state}` } as never }, { snapshot, ...(withCard ? { agentCardUrl: `http://127.0.0.1:9/round-${round}` } : {}) }).catch((error: unknown) => {
              if (!(error instanceof JournalError) || !['TASK_BOUND_ELSEWHERE', 'TASK_MISMATCH'].includes(error.code)) throw error;
            }),
          ),
        );
        const records = await Promise.all(workflows.map((ref) => producer.journal.getDelegation(ref)));
        const taskIds = records.map((record) => record!.taskId).filter(Boolean);
        expect(new Set(taskIds).size).toBe(taskIds.length);
        // Every recorded task id is bound to the delegation that recorded it (whichever path bound it).
        for (const [index, record] of records.entries()) {
          if (!record?.taskId) continue;
          const owner = await producer.journal.redis.get(producer.journal.keys.taskOwner(`http://127.0.0.1:9/round-${round}`, record.taskId));
          expect(owner).toBe(`${workflows[index]!.workflowId}|main.1`);
        }
      }),
      { numRuns: 40, seed: Number(process.env.FAST_CHECK_SEED ?? 12) },
    );
  });
});

describe('an agent that answers two delegations with the same task id (real fleet)', () => {
  const start = useScriptedFleet(redisServer);

  it('the first delegation keeps T1; the second is never bound to it', async () => {
    const { agent, producer } = await start(completesTask('T1', 'done'), { prefix: 'wj-own-fleet' });
    const first = await producer.delegate({ agent: agent.cardUrl, text: 'one', idempotencyKey: 'wj-own-fleet-1' });
    await eventually(async () => (await producer.get(first.id)).state === 'COMPLETED', 'first completed', 15_000);
    const second = await producer.delegate({ agent: agent.cardUrl, text: 'two', idempotencyKey: 'wj-own-fleet-2' });
    const [secondDelegation] = await producer.journal.delegationIds(second.id);
    const record = await eventually(async () => {
      const current = await producer.journal.getDelegation({ workflowId: second.id, delegationId: secondDelegation! });
      return current?.protocolError && current;
    }, 'the refusal journaled', 15_000);
    expect(record.protocolError).toMatchObject({ code: 'TASK_BOUND_ELSEWHERE' });
    for (const id of await producer.journal.delegationIds(second.id)) {
      expect((await producer.journal.getDelegation({ workflowId: second.id, delegationId: id }))!.taskId).not.toBe('T1');
    }
    const [firstDelegation] = await producer.journal.delegationIds(first.id);
    expect((await producer.journal.getDelegation({ workflowId: first.id, delegationId: firstDelegation! }))!.taskId).toBe('T1');
  });
});
