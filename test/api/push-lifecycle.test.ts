/**
 * The push notification config life cycle (P31, A2A §4.3.3 / §9) against raw JSON-RPC agents with scripted
 * config stores (`harness/push-config-agent.ts`): checked once after SendMessage binds the task, created once
 * when absent (our id and the journaled token), recognised however the agent lists it, registered again after a
 * worker restart without a second config, deleted exactly once at the end; polling completes the delegation
 * whatever push does.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useRedisServer } from '../harness/redis.ts';
import { eventually, spawnWorkerProcess, startTestFleet } from '../harness/fleet.ts';
import { completedView, delegatePushed, startPushStack, type PushStack } from '../harness/push-stack.ts';
import { startPushConfigAgent, type PushConfigAgentBehaviour, type PushConfigAgentHandle } from '../harness/push-config-agent.ts';

const redisServer = useRedisServer({ appendOnly: true });

const stack = (prefix: string, workers = true) => startPushStack(redisServer().url, prefix, workers);
type Stack = PushStack;

const configCalls = (agent: PushConfigAgentHandle, method: string) => agent.calls.filter((call) => call.method === `${method}TaskPushNotificationConfig${method === 'List' ? 's' : ''}`);

const delegate = (env: Stack, agent: PushConfigAgentHandle, workflowId: string) => delegatePushed(env, agent.cardUrl, workflowId);

/** Waits until the registration was decided (anything but not checked yet, or creating). */
const registrationDecided = (record: () => Promise<{ pushConfigState?: string }>) =>
  eventually(async () => {
    const state = (await record()).pushConfigState;
    return state !== undefined && state !== 'creating' && state;
  }, 'push config registration decided');

describe('push config life cycle (P31)', () => {
  let env: Stack;
  let n = 0;
  beforeAll(async () => {
    env = await stack('p31');
  });
  afterAll(async () => {
    await env?.close();
  });

  it('P31 (a): an agent that drops inline configs gets one Create (our id, the journaled token); push delivers; one Delete at the end', async () => {
    const agent = await startPushConfigAgent({ keepsInline: false });
    try {
      const { ref, record } = await delegate(env, agent, `p31-a-${++n}`);
      expect(await registrationDecided(record)).toBe('registered');
      const token = await env.producer.journal.pushToken(ref);
      const [list] = configCalls(agent, 'List');
      expect(list!.params).toMatchObject({ taskId: 'T1', pageSize: 100 });
      const creates = configCalls(agent, 'Create');
      expect(creates).toHaveLength(1);
      const row = await record();
      expect(creates[0]!.params).toMatchObject({ taskId: 'T1', id: row.pushConfigId, token, url: `${env.webhookUrl}/${ref.workflowId}/main.1` });
      expect(row.pushConfigId).toMatch(/^da2a-[A-Za-z0-9_-]{22}$/);
      expect(agent.configs()).toHaveLength(1);

      await agent.complete('pushed');
      expect(agent.pushStatuses).toEqual([204]);
      const view = await completedView(env, ref.workflowId);
      expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', resultText: 'pushed', artifacts: [expect.objectContaining({ artifactId: 'result' })] });
      await eventually(async () => (await record()).pushConfigState === 'deleted' && configCalls(agent, 'Delete').length === 1, 'one Delete');
      expect(configCalls(agent, 'Delete').map((call) => [call.params.id, call.afterCompletion])).toEqual([[row.pushConfigId, true]]);
      expect(agent.configs()).toEqual([]);
      expect(agent.maxConfigs()).toBe(1);
    } finally {
      await agent.close();
    }
  });

  it('P31 (b): a config listed as {"id":"T1","taskId":""} with our url and token is ours: no Create; its id is the one deleted', async () => {
    const agent = await startPushConfigAgent({ keepsInline: true, keysBy: 'task', listsEmptyTaskId: true });
    try {
      const { ref, record } = await delegate(env, agent, `p31-b-${++n}`);
      expect(await registrationDecided(record)).toBe('registered');
      expect(configCalls(agent, 'List')).toHaveLength(1);
      expect(configCalls(agent, 'Create')).toHaveLength(0);
      expect(await record()).toMatchObject({ pushConfigId: 'T1' });
      await agent.complete('pushed');
      await completedView(env, ref.workflowId);
      await eventually(async () => configCalls(agent, 'Delete').length === 1 && (await record()).pushConfigState === 'deleted', 'one Delete');
      expect(configCalls(agent, 'Delete')[0]!.params).toMatchObject({ taskId: 'T1', id: 'T1' });
      expect(agent.configs()).toEqual([]);
    } finally {
      await agent.close();
    }
  });

  it('P31 (d): Delete of a config the agent already dropped answers {}: done, one Delete, no retries', async () => {
    const agent = await startPushConfigAgent({ keepsInline: true, dropsConfigsOnCompletion: true });
    try {
      const { ref, record } = await delegate(env, agent, `p31-d-${++n}`);
      expect(await registrationDecided(record)).toBe('registered');
      await agent.complete('pushed');
      await completedView(env, ref.workflowId);
      await eventually(async () => (await record()).pushConfigState === 'deleted', 'the Delete claimed');
      await eventually(async () => configCalls(agent, 'Delete').length > 0, 'the Delete sent');
      // The claim is final (compare-and-set to 'deleted'): a later settle of the finished row sends no second Delete.
      expect((await env.producer.get(ref.workflowId)).state).toBe('COMPLETED');
      expect(configCalls(agent, 'Delete')).toHaveLength(1);
    } finally {
      await agent.close();
    }
  });

  it('P31 property: whatever the agent does with configs, at most one config at a time, one Delete after the end when one existed, completed by polling', async () => {
    const behaviour = fc.record<PushConfigAgentBehaviour>({
      keepsInline: fc.boolean(),
      keysBy: fc.constantFrom('id-or-task', 'task'),
      listsEmptyTaskId: fc.boolean(),
      createAssignsId: fc.boolean(),
      failing: fc.subarray(['list', 'create', 'delete'] as const),
      refusesCreate: fc.boolean(),
      dropsConfigsOnCompletion: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(behaviour, async (scripted) => {
        const agent = await startPushConfigAgent(scripted);
        try {
          const { ref, record } = await delegate(env, agent, `p31-p-${++n}`);
          await registrationDecided(record);
          await agent.complete('done');
          await completedView(env, ref.workflowId);
          await eventually(async () => (await record()).pushConfigState === 'deleted' || (await record()).pushConfigState === 'refused', 'the life cycle ended');
          if ((await record()).pushConfigState === 'deleted') await eventually(async () => configCalls(agent, 'Delete').length > 0, 'the Delete sent');
          expect(agent.maxConfigs()).toBeLessThanOrEqual(1);
          expect(configCalls(agent, 'List').length).toBeLessThanOrEqual(1);
          expect(configCalls(agent, 'Create').length).toBeLessThanOrEqual(1);
          const deletes = configCalls(agent, 'Delete');
          expect(deletes.length).toBe(agent.maxConfigs() > 0 ? 1 : deletes.length);
          expect(deletes.length).toBeLessThanOrEqual(1);
          expect(deletes.every((call) => call.afterCompletion)).toBe(true);
        } finally {
          await agent.close();
        }
      }),
      { numRuns: Number(process.env.P31_RUNS ?? 12), seed: Number(process.env.P31_SEED ?? 31), endOnFailure: true },
    );
  }, 240_000);
});

describe('push config life cycle across a worker restart (P31 (c))', () => {
  let env: Stack;
  beforeAll(async () => {
    env = await stack('p31c', false);
  });
  afterAll(async () => {
    await env?.close();
  });

  it('P31 (c): killed after Create, before its answer was journaled: the next worker registers again, the agent ends with one config (same id, same token)', async () => {
    const agent = await startPushConfigAgent({ keepsInline: false, keysBy: 'id-or-task' });
    const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: 'p31c', DA2A_WEBHOOK_URL: env.webhookUrl, DA2A_CRASH_AT: 'push.after-create' });
    try {
      await worker.ready;
      const { ref, record } = await delegate(env, agent, 'p31-c');
      expect((await worker.exited).signal).toBe('SIGKILL');
      const crashed = await record();
      expect(crashed).toMatchObject({ taskId: 'T1', pushConfigState: 'creating' });
      expect(configCalls(agent, 'Create')).toHaveLength(1);
      const token = await env.producer.journal.pushToken(ref);

      const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: 'p31c', webhookUrl: env.webhookUrl });
      try {
        expect(await registrationDecided(record)).toBe('registered');
        expect(agent.configs()).toEqual([expect.objectContaining({ id: crashed.pushConfigId, token, taskId: 'T1' })]);
        expect(agent.maxConfigs()).toBe(1);
        for (const create of configCalls(agent, 'Create')) expect(create.params).toMatchObject({ id: crashed.pushConfigId, token });
        await agent.complete('pushed');
        await completedView(env, ref.workflowId);
        await eventually(async () => configCalls(agent, 'Delete').length === 1 && (await record()).pushConfigState === 'deleted', 'one Delete');
        expect(agent.configs()).toEqual([]);
      } finally {
        await fleet.close();
      }
    } finally {
      await worker.kill();
      await agent.close();
    }
  }, 60_000);
});
