/**
 * A pushed final Task keeps its result (P31 (a)): whatever source's full Task settles a delegation (SendMessage
 * answer, GetTask, a stream's snapshot, a push), its artifacts are stored in the same transition, and a completion
 * pushed without its result (a status update) never settles the row before a full read. Raw JSON-RPC 1.0 agents
 * (`harness/push-config-agent.ts`) push to the real webhook; polling can be held back so the push is what settles.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useRedisServer } from '../harness/redis.ts';
import { eventually } from '../harness/fleet.ts';
import { completedView, delegatePushed, startPushStack, type PushStack } from '../harness/push-stack.ts';
import { startPushConfigAgent, type PushConfigAgentBehaviour, type PushConfigAgentHandle } from '../harness/push-config-agent.ts';

const redisServer = useRedisServer();

/** The attempt carries the agent's one artifact and its text as the result. */
async function expectResult(env: PushStack, workflowId: string, text: string) {
  const view = await completedView(env, workflowId);
  expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', resultText: text, artifacts: [{ artifactId: 'result', parts: [{ text }] }] });
}

/** The row as the journal holds it now, with its artifacts. */
const rowOf = (env: PushStack, workflowId: string) => env.producer.journal.getDelegationView({ workflowId, delegationId: 'main.1' }).then((view) => view!);

/**
 * Waits until the task id is journaled (a push before it is refused: it only applies to the task id we recorded) and
 * the follow's first read of it (WORKING, after the send's SUBMITTED) is too: a pushed completion is applied on the row
 * as the webhook read it, and a read journaled in between is a version conflict that hands the push to a full read
 * (routes/push.ts `applyPush`), which a test holding GetTask at WORKING never sees complete (the final CI run of
 * 2026-12-07 failed so). Later reads of the same WORKING change nothing.
 */
const taskBound = (env: PushStack, workflowId: string) =>
  eventually(async () => {
    const row = await rowOf(env, workflowId);
    return row.taskId === 'T1' && row.state === 'WORKING';
  }, 'task id and the first read journaled');

describe('a pushed final Task keeps its result (P31 (a))', () => {
  let env: PushStack;
  let n = 0;
  beforeAll(async () => {
    env = await startPushStack(redisServer().url, 'pushres');
  });
  afterAll(async () => {
    await env?.close();
  });

  /** Starts an agent with `behaviour`, delegates one pushed step to it (workflow `<name>-<n>`), runs `body`, closes the agent. */
  async function onDelegation(name: string, behaviour: PushConfigAgentBehaviour, body: (agent: PushConfigAgentHandle, workflowId: string) => Promise<void>) {
    const agent = await startPushConfigAgent(behaviour);
    try {
      const workflowId = `${name}-${++n}`;
      await delegatePushed(env, agent.cardUrl, workflowId);
      await body(agent, workflowId);
    } finally {
      await agent.close();
    }
  }

  it('push first (polling held back): the whole COMPLETED Task pushed settles the attempt with its artifact, in the push itself', async () => {
    await onDelegation('push-first', {}, async (agent, workflowId) => {
      await taskBound(env, workflowId);
      await agent.complete('pushed', { polling: 'held' });
      expect(agent.pushStatuses).toEqual([204]);
      // GetTask still answers WORKING: the push alone finished the row, and the result came with it.
      expect(await rowOf(env, workflowId)).toMatchObject({ state: 'COMPLETED', artifacts: [{ artifactId: 'result', parts: [{ text: 'pushed' }] }] });
      await expectResult(env, workflowId, 'pushed');
    });
  });

  it('poll first: GetTask settles with the artifact; the whole Task pushed after it changes nothing', async () => {
    await onDelegation('poll-first', {}, async (agent, workflowId) => {
      await taskBound(env, workflowId);
      await agent.complete('polled', { push: 'none' });
      await expectResult(env, workflowId, 'polled');
      const settled = await rowOf(env, workflowId);
      // Pushes queued before the settle's Delete, delivered after it.
      await agent.pushCompletion('task', { late: true });
      await agent.pushCompletion('status', { late: true });
      expect(agent.pushStatuses).toEqual([204, 204]);
      expect(await rowOf(env, workflowId)).toMatchObject({ state: 'COMPLETED', version: settled.version, artifacts: settled.artifacts });
    });
  });

  it('a COMPLETED status update pushed (polling held back) settles nothing: the workers read in full, and the row completes only with the full read', async () => {
    await onDelegation('status-push', {}, async (agent, workflowId) => {
      await taskBound(env, workflowId);
      const readsBefore = agent.readCount();
      await agent.complete('read in full', { push: 'status', polling: 'held' });
      expect(agent.pushStatuses).toEqual([204]);
      expect((await rowOf(env, workflowId)).state).not.toBe('COMPLETED');
      // The push woke the workers; their read still says WORKING, so nothing is settled.
      await eventually(async () => agent.readCount() > readsBefore, 'a read after the push');
      expect((await rowOf(env, workflowId)).state).not.toBe('COMPLETED');
      agent.releasePolling();
      await expectResult(env, workflowId, 'read in full');
    });
  });

  it('property: over sources (SendMessage answer, GetTask, stream snapshot) × orders (push first, poll first, both) × push kinds, the settled attempt holds the result', async () => {
    const sources = ['send-answer', 'get-task', 'stream'] as const;
    const orders = ['push-first', 'poll-first', 'both'] as const;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...sources), fc.constantFrom(...orders), fc.constantFrom('task' as const, 'status' as const), async (source, order, kind) => {
        const text = `${source}/${order}/${kind}`;
        const behaviour: PushConfigAgentBehaviour =
          source === 'send-answer'
            ? { completesOnSend: { text, ...(order === 'poll-first' ? {} : { push: { kind, order: order === 'push-first' ? 'before-answer' : 'with-answer' } }) } }
            : { streamsSnapshot: source === 'stream' };
        await onDelegation('prop', behaviour, async (agent, workflowId) => {
          if (source === 'send-answer') {
            await expectResult(env, workflowId, text);
            if (order === 'poll-first') await agent.pushCompletion(kind, { late: true });
            await eventually(async () => agent.pushStatuses.length === 1, 'the push answered');
          } else {
            await taskBound(env, workflowId);
            if (order === 'push-first') {
              await agent.complete(text, { push: kind, polling: 'held' });
              // A whole Task settles in the push itself; a status update never does.
              expect((await rowOf(env, workflowId)).state === 'COMPLETED').toBe(kind === 'task');
              agent.releasePolling();
            } else if (order === 'poll-first') {
              await agent.complete(text, { push: 'none' });
              await expectResult(env, workflowId, text);
              await agent.pushCompletion(kind, { late: true });
            } else await agent.complete(text, { push: kind });
            expect(agent.pushStatuses).toEqual([204]);
          }
          await expectResult(env, workflowId, text);
          expect(agent.raw.requests.filter((request) => request.body.includes('"SendMessage"'))).toHaveLength(1);
        });
      }),
      { numRuns: Number(process.env.PUSH_RESULT_RUNS ?? 30), seed: Number(process.env.PUSH_RESULT_SEED ?? 41), endOnFailure: true },
    );
  }, 240_000);
});
