/**
 * A push refused over a limit is a refused part of the result (field case A32, docs/delegation-core.md "A refused part
 * of the result"), as a stream event refused over a limit is: the row's `refusedResult` is written (the refused
 * artifact's id when the limit was found on one), and a later pushed COMPLETED Task settles the row only when it shows
 * every refused artifact; otherwise the workers read the task in full. Before: a push whose artifact had 1,001 parts
 * was a 400 and nothing else; a pushed COMPLETED Task with any other artifact then settled the row COMPLETED, the
 * refused artifact silently missing. The same for a body over the push body limit, or nested over `jsonDepth`.
 * The property over sequences of pushes: test/api/push-refused-result-property.test.ts.
 * Real redis-server, the real push route (inject), no workers.
 */
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queuePrefix } from '@durable-a2a/shared';
import { PUSH_BODY_LIMIT_BYTES } from '../../packages/producer/src/server/routes/push.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { overPartsArtifactPush, pushedTask, usePushRoute } from '../harness/pushes.ts';

const redisServer = useRedisServer();

describe('a push refused over a limit leaves the refused-result fact', () => {
  const PREFIX = 'rrpush';
  const redis = useRedisClient(redisServer);
  const route = usePushRoute(redisServer, PREFIX);
  let reconcile: Queue;
  beforeAll(() => {
    reconcile = new Queue('reconcile', { connection: redis(), prefix: queuePrefix(PREFIX) });
  });
  afterAll(async () => {
    await reconcile?.close();
  });

  /** A delegation bound to T1, WORKING; its row and its reconcile jobs. */
  async function working() {
    const delegation = await route.working();
    const record = async () => (await route.producer().journal.getDelegation(delegation.ref))!;
    const jobs = async () => (await reconcile.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed'])).filter((job) => job.data.workflowId === delegation.ref.workflowId);
    return { ...delegation, record, jobs };
  }

  it('an artifact over partsPerMessage: 413, the refusal journaled with its artifact id; a COMPLETED Task without it is read in full; with it, it settles', async () => {
    const { push, record, jobs } = await working();
    const refused = await push(overPartsArtifactPush('T1', 'a1'));
    expect(refused.statusCode).toBe(413);
    expect(refused.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect((await record()).refusedResult).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'partsPerMessage', delivery: 'received', artifactIds: ['a1'] });
    expect((await jobs()).length).toBeGreaterThan(0);
    // Another artifact is no proof the refused one is back: not applied, the workers read the task in full.
    const other = await push(pushedTask('T1', 'COMPLETED', ['a2']));
    expect(other.statusCode).toBe(204);
    expect((await record()).state).toBe('WORKING');
    const whole = await push(pushedTask('T1', 'COMPLETED', ['a1', 'a2']));
    expect(whole.statusCode).toBe(204);
    expect((await record()).state).toBe('COMPLETED');
  });

  it('a body over the push body limit (authorized): 413, the refusal journaled without an artifact id; unauthorized: nothing journaled', async () => {
    const { push, anonymous, record } = await working();
    const big = JSON.stringify({ ...pushedTask('T1', 'WORKING', []), metadata: { pad: 'x'.repeat(PUSH_BODY_LIMIT_BYTES) } });
    expect((await anonymous(big)).statusCode).toBe(401);
    expect((await record()).refusedResult).toBeUndefined();
    const refused = await push(big);
    expect(refused.statusCode).toBe(413);
    const fact = (await record()).refusedResult;
    expect(fact).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'pushBodyBytes', delivery: 'received' });
    expect(fact?.artifactIds).toBeUndefined();
    // A refusal that knew no artifact: a pushed COMPLETED Task with artifacts of its own shows the result.
    expect((await push(pushedTask('T1', 'COMPLETED', ['a1']))).statusCode).toBe(204);
    expect((await record()).state).toBe('COMPLETED');
  });

  it('a body nested over jsonDepth: 400, the refusal journaled', async () => {
    const { push, record } = await working();
    let deep: unknown = 'x';
    for (let level = 0; level < 80; level++) deep = { deep };
    const refused = await push({ ...pushedTask('T1', 'WORKING', []), metadata: deep });
    expect(refused.statusCode).toBe(400);
    expect((await record()).refusedResult).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'jsonDepth' });
  });

  it('a push of another task over a limit: 403, nothing journaled on ours', async () => {
    const { push, record } = await working();
    const refused = await push(overPartsArtifactPush('T-other', 'a1'));
    expect(refused.statusCode).toBe(403);
    expect((await record()).refusedResult).toBeUndefined();
  });
});
