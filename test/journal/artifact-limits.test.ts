/**
 * Bounded inputs in the journal (docs/a2a-edge.md "Limits"; RT5/RT7): artifact bytes per delegation, summed over
 * chunks and pushes, stay within `artifactBytesPerDelegation`; over it nothing is stored and the attempt
 * ends AMBIGUOUS with a permanent LIMIT_EXCEEDED reason (the agent produced output: a person decides, A31; FAILED
 * when the agent itself reported the task FAILED, REJECTED or CANCELED). Real redis-server, real push route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Journal, applyTask } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { ApiServer } from '@durable-a2a/producer/server';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually } from '../harness/fleet.ts';
import { startTestServer } from '../harness/api-server.ts';
import { completesTask, task } from '../harness/scripted-agent.ts';
import { useScriptedFleet } from '../harness/lifecycle.ts';

const redisServer = useRedisServer();
const MiB = 1024 * 1024;

describe('artifact bytes per delegation', () => {
  let producer: Producer;
  let app: ApiServer;
  const redis = useRedisClient(redisServer);
  beforeAll(async () => {
    producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix: 'wj-art' });
    app = startTestServer({ redisUrl: redisServer().url, prefix: 'wj-art' });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await producer?.close();
  });

  it('RT5: ten authorized pushes of a 3.9 MB whole artifact end the attempt LIMIT_EXCEEDED; Redis stays bounded', async () => {
    await producer.startWorkflow({ workflowId: 'rt5', steps: [{ name: 'main', agent: 'http://127.0.0.1:9/rt5', message: { text: 'go' }, push: true }] });
    const ref = { workflowId: 'rt5', delegationId: 'main.1' };
    await applyTask(producer.journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } }, { snapshot: true });
    const headers = { authorization: `Bearer ${(await producer.journal.pushToken(ref))!}`, 'content-type': 'application/json' };
    const chunk = 'x'.repeat(3_900_000);
    const statuses: number[] = [];
    for (let index = 0; index < 10; index++) {
      // Whole artifacts (a pushed chunk is not applied: pushes come out of order and repeated, attack13).
      const payload = JSON.stringify({ artifactUpdate: { taskId: 'T1', contextId: 'C1', artifact: { artifactId: `a${index}`, parts: [{ text: chunk }] }, lastChunk: true } });
      statuses.push((await app.inject({ method: 'POST', url: '/v1/push/rt5/main.1', headers, payload })).statusCode);
    }
    // 4 chunks fit in 16 MiB (15.6 MB); the 5th would pass the limit: the attempt ends there.
    expect(statuses.slice(0, 4)).toEqual([204, 204, 204, 204]);
    expect(statuses[4]).toBe(413);
    const record = (await producer.journal.getDelegation(ref))!;
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error).toMatchObject({ code: 'LIMIT_EXCEEDED', retryable: false, limit: 'artifactBytesPerDelegation', delivery: 'received' });
    const artifactsKey = producer.journal.keys.artifacts('rt5', 'main.1');
    // SAMPLES 0: every field is measured. The default (5 samples, extrapolated) depends on the hash seed of the
    // redis-server run, so it read 13.4, 20.1 or 33.6 MB for the same 15.6 MB (the CI failure of stop 46).
    const bytes = Number(await redis().call('MEMORY', 'USAGE', artifactsKey, 'SAMPLES', '0'));
    expect(bytes).toBeGreaterThan(4 * 3_900_000 - 1);
    expect(bytes).toBeLessThan(16 * MiB + 1 * MiB);
    // The agent produced output, so it may have done the work: never re-delegated blind (A31); a person decides.
    const view = await producer.get('rt5');
    expect(view.steps[0]?.attempts.at(-1)?.state).toBe('AMBIGUOUS');
    expect(view.steps[0]?.attempts).toHaveLength(1);
  }, 120_000);

  /**
   * A journal whose limit is 1 MiB under `prefix`, a producer on it, and a started one-step workflow `workflowId`
   * (its row `ref`): `body` runs with them, the producer closed after it.
   */
  const withSmallLimit = async (prefix: string, workflowId: string, body: (journal: Journal, small: Producer, ref: { workflowId: string; delegationId: string }) => Promise<void>) => {
    const journal = new Journal(redis(), { prefix, artifactBytesPerDelegation: 1 * MiB });
    const small = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix });
    try {
      await small.startWorkflow({ workflowId, steps: [{ name: 'main', agent: `http://127.0.0.1:9/${workflowId}`, message: { text: 'go' } }] });
      await body(journal, small, { workflowId, delegationId: 'main.1' });
    } finally {
      await small.close();
    }
  };

  it('a snapshot holding more than the limit is not stored: the attempt ends LIMIT_EXCEEDED', async () => {
    await withSmallLimit('wj-art-snap', 'snap', async (journal, small, ref) => {
      const artifacts = [{ artifactId: 'a1', parts: [{ text: 'y'.repeat(2 * MiB) }] }];
      await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED' }, artifacts }, { snapshot: true });
      const view = (await journal.getDelegationView(ref))!;
      expect(view).toMatchObject({ state: 'AMBIGUOUS', taskId: 'T1', error: { code: 'LIMIT_EXCEEDED', limit: 'artifactBytesPerDelegation' } });
      expect(view.artifacts).toEqual([]);
      // The agent itself reported the task FAILED: its artifacts still prove work we could not keep; AMBIGUOUS too
      // (failedartifacts31: an unsuccessful task that carries artifacts is effect unknown, never re-delegated).
      await small.startWorkflow({ workflowId: 'snap-failed', steps: [{ name: 'main', agent: 'http://127.0.0.1:9/snap', message: { text: 'go' } }] });
      const failedRef = { workflowId: 'snap-failed', delegationId: 'main.1' };
      await applyTask(journal, failedRef, { id: 'T2', contextId: 'C2', status: { state: 'TASK_STATE_FAILED' }, artifacts }, { snapshot: true });
      expect(await journal.getDelegationView(failedRef)).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED' }, artifacts: [] });
    });
  });

  // mend15: a running Task's list is merged in (what it leaves out is kept); a merge whose bytes would pass the limit
  // replaces instead, so the stored bytes never pass it (what it dropped is named in leftOut: in doubt until a full read).
  it('a running Task within the limit whose merge with the held artifacts would pass it replaces them; the bytes stay within the limit', async () => {
    await withSmallLimit('wj-art-merge', 'merge', async (journal, _small, ref) => {
      const running = (artifacts: { artifactId: string; parts: { text: string }[] }[]) => applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' }, artifacts }, { snapshot: true });
      const ids = async () => (await journal.getDelegationView(ref))!.artifacts.map((each) => each.artifactId);
      const artifactBytes = async () => Number(await redis().hget(journal.keys.delegation(ref.workflowId, ref.delegationId), 'artifactBytes'));
      await running([{ artifactId: 'a1', parts: [{ text: 'x'.repeat(100) }] }, { artifactId: 'a2', parts: [{ text: 'y'.repeat(MiB / 2) }] }]);
      // a2 left out, a1 grown: within the limit merged (a1 and a2 kept).
      expect(await running([{ artifactId: 'a1', parts: [{ text: 'x'.repeat(MiB / 4) }] }])).toMatchObject({ applied: true, leftOut: ['a2'] });
      expect(await ids()).toEqual(['a1', 'a2']);
      expect(await artifactBytes()).toBeLessThanOrEqual(MiB);
      // a1 grown past what a2 leaves room for: replaced (a1 alone), never over the limit.
      expect(await running([{ artifactId: 'a1', parts: [{ text: 'x'.repeat((3 * MiB) / 4) }] }])).toMatchObject({ applied: true, leftOut: ['a2'] });
      expect(await ids()).toEqual(['a1']);
      expect(await artifactBytes()).toBeLessThanOrEqual(MiB);
      expect((await journal.getDelegation(ref))!.state).toBe('WORKING');
    });
  });
});

describe('an oversized artifact in a SendMessage answer (real fleet)', () => {
  const start = useScriptedFleet(redisServer);

  it('a 2 MiB artifact against a 1 MiB limit: the attempt ends AMBIGUOUS LIMIT_EXCEEDED (a person decides), nothing stored, one SendMessage', async () => {
    const { agent, producer } = await start(completesTask('T1', 'z'.repeat(2 * MiB)), { prefix: 'wj-art-fleet', fleet: { artifactBytesPerDelegation: 1 * MiB } });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'big', idempotencyKey: 'wj-art-fleet-1' });
    const [delegationId] = await producer.journal.delegationIds(id);
    const view = await eventually(async () => {
      const current = await producer.journal.getDelegationView({ workflowId: id, delegationId: delegationId! });
      return current?.state === 'AMBIGUOUS' && current;
    }, 'attempt ended', 90_000);
    expect(view.error).toMatchObject({ code: 'LIMIT_EXCEEDED' });
    expect(view.artifacts).toEqual([]);
    expect(agent.count('SendMessage')).toBe(1);
  }, 120_000);

  // The edge stops the body at responseBodyBytes; ending the attempt on that LimitExceededError (a permanent
  // protocol error, not "unreadable → reconciler → AMBIGUOUS") is send.ts's rule, branch wild-send. Flip to `it` then.
  it('RT5: a 50 MB artifact in the SendMessage answer (the edge stops the body): a person decides (AMBIGUOUS LIMIT_EXCEEDED: it arrived, the work may be done), nothing stored', async () => {
    const huge = JSON.stringify({ task: task('T1', 'COMPLETED', { contextId: 'C1', artifacts: { a1: 'w'.repeat(50_000_000) } }) });
    const { agent, producer } = await start(
      {
        SendMessage: () => ({ result: JSON.parse(huge) }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { artifacts: { a1: 'w'.repeat(50_000_000) } }) }),
      },
      { prefix: 'wj-art-50' },
    );
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'huge', idempotencyKey: 'wj-art-50-1' });
    const [delegationId] = await producer.journal.delegationIds(id);
    const view = await eventually(async () => {
      const current = await producer.journal.getDelegationView({ workflowId: id, delegationId: delegationId! });
      return current && ['FAILED', 'AMBIGUOUS', 'COMPLETED'].includes(current.state) && current;
    }, 'attempt ended', 90_000);
    expect(view.state).toBe('AMBIGUOUS');
    expect(view.error).toMatchObject({ code: 'LIMIT_EXCEEDED', delivery: 'received' });
    expect(view.artifacts).toEqual([]);
    expect(agent.count('SendMessage')).toBe(1);
  }, 120_000);
});
