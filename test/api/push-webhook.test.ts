import zlib from 'node:zlib';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '@durable-a2a/producer/server';
import { Queue } from 'bullmq';
import { applyTask, queuePrefix } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { PUSH_BODY_LIMIT_BYTES } from '../../packages/producer/src/server/routes/push.ts';
import { startPushConfigAgent, type PushConfigAgentHandle } from '../harness/push-config-agent.ts';

const redisServer = useRedisServer();

const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)).toISOString();
/** A whole COMPLETED Task with its result: a full read, it settles the row. */
const completedPush = (taskId: string, seconds = 10) => ({
  task: { id: taskId, contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED', timestamp: at(seconds) }, artifacts: [{ artifactId: 'result', parts: [{ text: 'done' }] }] },
});
/** A COMPLETED status update: it never carries the result, so it is read in full before anything settles. */
const completedStatusPush = (taskId: string, seconds = 10) => ({ statusUpdate: { taskId, contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED', timestamp: at(seconds) } } });

describe('push webhook authentication and task check (R18)', () => {
  const PREFIX = 'r18';
  const redis = useRedisClient(redisServer);
  let producer: Producer;
  let app: ApiServer;
  let reconcile: Queue;
  let n = 0;

  beforeAll(async () => {
    producer = createProducer({ redis: redis(), prefix: PREFIX, addressPolicy: { allowLoopback: true } });
    app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
    reconcile = new Queue('reconcile', { connection: redis(), prefix: queuePrefix(PREFIX) });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await reconcile?.close();
    await producer?.close();
  });

  /** A pushed delegation whose SendMessage answered task `taskId` (SUBMITTED), as the send worker journals it; no workers run. */
  async function pushedDelegation(taskId: string | undefined, withResult = true) {
    const workflowId = `r18-${++n}`;
    // One agent per delegation: a task id is bound to at most one delegation per agent.
    await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: `http://127.0.0.1:9/${workflowId}`, message: { text: 'go' }, push: true }] });
    const ref = { workflowId, delegationId: 'main.1' };
    // The task already has its result: a COMPLETED status update then needs no full read first (see the read-first test).
    const artifacts = withResult ? [{ artifactId: 'a1', parts: [{ text: 'the result' }] }] : [];
    if (taskId) await applyTask(producer.journal, ref, { id: taskId, contextId: 'C1', status: { state: 'TASK_STATE_SUBMITTED', timestamp: at(0) }, artifacts }, { snapshot: true });
    const secret = (await producer.journal.pushToken(ref))!;
    expect(secret).toBeTruthy();
    const url = `/v1/push/${workflowId}/main.1`;
    const record = async () => (await producer.journal.getDelegation(ref))!;
    return { ref, secret, url, record };
  }

  const reconcileJobsFor = async (workflowId: string) =>
    (await reconcile.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed'])).filter((job) => job.data.workflowId === workflowId);

  const pushCount = async (server: ApiServer, outcome: string) => {
    const text = (await server.inject({ method: 'GET', url: '/metrics' })).body;
    return Number(new RegExp(`^durable_a2a_push_notifications_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  };

  it('(a) no auth headers: 401, state unchanged, nothing scheduled', async () => {
    const { url, record, ref } = await pushedDelegation('T1');
    const before = await record();
    const response = await app.inject({ method: 'POST', url, payload: completedPush('T1'), headers: { 'content-type': 'application/a2a+json' } });
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ code: 'UNAUTHORIZED' });
    expect(await record()).toMatchObject({ state: 'SUBMITTED', version: before.version });
    expect(await reconcileJobsFor(ref.workflowId)).toHaveLength(0);
  });

  it('(a) auth runs before the body is read: a malformed body without credentials is 401, not 400', async () => {
    const { url } = await pushedDelegation('T1');
    const response = await app.inject({ method: 'POST', url, payload: '{not json', headers: { 'content-type': 'application/json' } });
    expect(response.statusCode).toBe(401);
    const wrong = await app.inject({ method: 'POST', url, payload: '{not json', headers: { 'content-type': 'application/json', authorization: 'Bearer nope' } });
    expect(wrong.statusCode).toBe(401);
  });

  it('unknown delegations and delegations without push look like wrong credentials: 401', async () => {
    const { secret } = await pushedDelegation('T1');
    const unknown = await app.inject({ method: 'POST', url: '/v1/push/nope/main.1', payload: completedPush('T1'), headers: { authorization: `Bearer ${secret}` } });
    expect(unknown.statusCode).toBe(401);
    await producer.startWorkflow({ workflowId: 'r18-no-push', steps: [{ name: 'main', agent: 'http://127.0.0.1:9/agent', message: { text: 'go' } }] });
    const noPush = await app.inject({ method: 'POST', url: '/v1/push/r18-no-push/main.1', payload: completedPush('T1'), headers: { authorization: `Bearer ${secret}` } });
    expect(noPush.statusCode).toBe(401);
  });

  it('(b) only X-A2A-Notification-Token (the header the SDKs send): accepted when it is the journaled token, a wrong one refused (P31)', async () => {
    const { url, secret, record } = await pushedDelegation('T1');
    const before = await record();
    const headers = { 'x-a2a-notification-token': secret, 'content-type': 'application/a2a+json' };
    const wrongToken = await app.inject({ method: 'POST', url, payload: completedPush('T1'), headers: { ...headers, 'x-a2a-notification-token': `${secret}x` } });
    expect(wrongToken.statusCode).toBe(401);
    const wrongBearerRightToken = await app.inject({ method: 'POST', url, payload: completedPush('T1'), headers: { ...headers, authorization: 'Bearer wrong' } });
    expect(wrongBearerRightToken.statusCode).toBe(401);
    expect((await record()).version).toBe(before.version);
    const otherDelegationsToken = await app.inject({ method: 'POST', url, payload: completedPush('T1'), headers: { ...headers, 'x-a2a-notification-token': (await pushedDelegation('T1')).secret } });
    expect(otherDelegationsToken.statusCode).toBe(401);
    const accepted = await app.inject({ method: 'POST', url, payload: completedPush('T1'), headers });
    expect(accepted.statusCode).toBe(204);
    expect((await record()).state).toBe('COMPLETED');
  });

  it('(c) right credentials, body for another task: 403, nothing applied to either task', async () => {
    const one = await pushedDelegation('T1');
    const two = await pushedDelegation('T2');
    const [oneBefore, twoBefore] = [await one.record(), await two.record()];
    const response = await app.inject({
      method: 'POST',
      url: one.url,
      payload: completedPush('T2'),
      headers: { authorization: `Bearer ${one.secret}`, 'x-a2a-notification-token': one.secret, 'content-type': 'application/a2a+json' },
    });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({ code: 'TASK_MISMATCH' });
    // Nothing applied; the refusal is journaled on the delegation as a protocol error (RT-ownership).
    expect(await one.record()).toMatchObject({ state: 'SUBMITTED', taskId: 'T1', version: oneBefore.version + 1, protocolError: { code: 'PUSH_NOT_OURS' } });
    expect(await two.record()).toMatchObject({ state: 'SUBMITTED', taskId: 'T2', version: twoBefore.version });
    expect(await reconcileJobsFor(one.ref.workflowId)).toHaveLength(0);
  });

  it('(d) correct: 204 and applied once; a duplicate is 204 and changes nothing', async () => {
    const { url, secret, record, ref } = await pushedDelegation('T1');
    const before = await record();
    const appliedBefore = await pushCount(app, 'applied');
    const duplicatesBefore = await pushCount(app, 'duplicate');
    const headers = { authorization: `Bearer ${secret}`, 'x-a2a-notification-token': secret, 'content-type': 'application/a2a+json' };
    const first = await app.inject({ method: 'POST', url, payload: completedPush('T1'), headers });
    expect(first.statusCode).toBe(204);
    const applied = await record();
    expect(applied).toMatchObject({ state: 'COMPLETED', version: before.version + 1 });
    // The result came with the status, in the same transition.
    expect((await producer.journal.getDelegationView(ref))!.artifacts).toEqual([expect.objectContaining({ artifactId: 'result', parts: [{ text: 'done' }] })]);
    const duplicate = await app.inject({ method: 'POST', url, payload: completedPush('T1'), headers });
    expect(duplicate.statusCode).toBe(204);
    expect((await record()).version).toBe(applied.version);
    // A late, older push changes nothing either.
    const late = await app.inject({ method: 'POST', url, payload: { statusUpdate: { taskId: 'T1', status: { state: 'TASK_STATE_WORKING', timestamp: at(5) } } }, headers });
    expect(late.statusCode).toBe(204);
    expect(await record()).toMatchObject({ state: 'COMPLETED', version: applied.version });
    expect(await pushCount(app, 'applied')).toBe(appliedBefore + 1);
    expect(await pushCount(app, 'duplicate')).toBe(duplicatesBefore + 2);
    // The applied push woke the workers once; the duplicates did not.
    expect(await reconcileJobsFor(ref.workflowId)).toHaveLength(1);
  });

  it('a COMPLETED status update, or a COMPLETED Task without artifacts, settles nothing: 204, the row unchanged, one reconcile to read the task in full', async () => {
    const { url, secret, record, ref } = await pushedDelegation('T1');
    const before = await record();
    const readsBefore = await pushCount(app, 'read-in-full');
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/a2a+json' };
    for (let push = 0; push < 3; push++) {
      const response = await app.inject({ method: 'POST', url, payload: completedStatusPush('T1'), headers });
      expect(response.statusCode).toBe(204);
    }
    const trimmed = await app.inject({ method: 'POST', url, payload: { task: { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED', timestamp: at(11) } } }, headers });
    expect(trimmed.statusCode).toBe(204);
    expect(await record()).toMatchObject({ state: 'SUBMITTED', version: before.version });
    expect(await pushCount(app, 'read-in-full')).toBe(readsBefore + 4);
    // The same pushed completion while its read waits is one job (one GetTask, not one per push).
    expect((await reconcileJobsFor(ref.workflowId)).map((job) => job.id).sort()).toEqual([`reconcile|${ref.workflowId}|main.1|pushed-completion|${Date.parse(at(10))}`, `reconcile|${ref.workflowId}|main.1|pushed-completion|${Date.parse(at(11))}`]);
  });

  it('a journal without a taskId yet refuses the push (403), journals it and binds nothing (RT-ownership)', async () => {
    const { url, secret, record } = await pushedDelegation(undefined);
    const response = await app.inject({
      method: 'POST',
      url,
      payload: { task: { id: 'T9', contextId: 'C9', status: { state: 'TASK_STATE_WORKING', timestamp: at(1) } } },
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(response.statusCode).toBe(403);
    expect(await record()).toMatchObject({ state: 'INTENT', protocolError: { code: 'PUSH_NOT_OURS' } });
    expect((await record()).taskId).toBeUndefined();
  });

  it('a 0.3 whole-Task body is accepted; a body that is neither is a 400 after auth', async () => {
    const { url, secret, record } = await pushedDelegation('T1');
    const v03 = { kind: 'task', id: 'T1', contextId: 'C1', status: { state: 'completed', timestamp: at(20) }, artifacts: [{ artifactId: 'a', parts: [{ kind: 'text', text: 'ok' }] }] };
    const response = await app.inject({ method: 'POST', url, payload: v03, headers: { authorization: `Bearer ${secret}` } });
    expect(response.statusCode).toBe(204);
    expect((await record()).state).toBe('COMPLETED');
    const junk = await app.inject({ method: 'POST', url, payload: { hello: 'world' }, headers: { authorization: `Bearer ${secret}` } });
    expect(junk.statusCode).toBe(400);
    expect(junk.json()).toMatchObject({ code: 'INVALID_INPUT' });
  });

  /**
   * Attack: an agent that gzips (or brotli-, zstd-, deflate-codes) the push it POSTs. Read as raw bytes, every such
   * push was "not JSON" (400) and its news lost until the fallback poll. Decoded with the client's decoder, its
   * decoded bytes held to PUSH_BODY_LIMIT_BYTES; a coding we cannot decode is a clear 415. Real sockets (undici).
   */
  describe('push bodies in a content coding (Content-Encoding on the POST)', () => {
    let base: string;
    beforeAll(async () => {
      base = await listenOnLoopback(app);
    });

    const codings: [string, (bytes: Buffer) => Buffer][] = [
      ['gzip', (bytes) => zlib.gzipSync(bytes)],
      ['x-gzip', (bytes) => zlib.gzipSync(bytes)],
      ['deflate', (bytes) => zlib.deflateSync(bytes)],
      ['deflate', (bytes) => zlib.deflateRawSync(bytes)],
      ['br', (bytes) => zlib.brotliCompressSync(bytes)],
      ['zstd', (bytes) => zlib.zstdCompressSync(bytes)],
      ['gzip, br', (bytes) => zlib.brotliCompressSync(zlib.gzipSync(bytes))],
    ];
    const post = (url: string, secret: string, body: Buffer, contentEncoding: string) =>
      request(base + url, { method: 'POST', body, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/a2a+json', 'content-encoding': contentEncoding } });

    for (const [index, [name, encode]] of codings.entries()) {
      it(`a COMPLETED Task pushed with Content-Encoding: ${name}${index === 3 ? ' (raw deflate)' : ''}: 204, applied`, async () => {
        const { url, secret, record } = await pushedDelegation('T1');
        const response = await post(url, secret, encode(Buffer.from(JSON.stringify(completedPush('T1')))), name);
        expect(response.statusCode).toBe(204);
        await response.body.dump();
        expect((await record()).state).toBe('COMPLETED');
      });
    }

    for (const [name, contentEncoding, body] of [
      ['an unknown coding', 'compress', Buffer.from(JSON.stringify(completedPush('T1')))],
      ['three layers', 'gzip, gzip, gzip', zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(JSON.stringify(completedPush('T1')))))],
    ] as const) {
      it(`${name} (${contentEncoding}): 415 with Accept-Encoding, nothing applied, the workers woken to read the task`, async () => {
        const { url, secret, record, ref } = await pushedDelegation('T1');
        const before = await record();
        const countBefore = await pushCount(app, 'unsupported-encoding');
        const response = await post(url, secret, body, contentEncoding);
        expect(response.statusCode).toBe(415);
        expect(response.headers['accept-encoding']).toMatch(/gzip/);
        expect(await response.body.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
        expect(await record()).toMatchObject({ state: 'SUBMITTED', version: before.version });
        expect(await pushCount(app, 'unsupported-encoding')).toBe(countBefore + 1);
        expect(await reconcileJobsFor(ref.workflowId)).toHaveLength(1);
      });
    }

    it('a corrupt gzip body: 400, nothing applied', async () => {
      const { url, secret, record } = await pushedDelegation('T1');
      const response = await post(url, secret, Buffer.from('\x1f\x8b\x08\x00not gzip'), 'gzip');
      expect(response.statusCode).toBe(400);
      expect(await response.body.json()).toMatchObject({ code: 'INVALID_INPUT' });
      expect((await record()).state).toBe('SUBMITTED');
    });

    it('a gzip bomb (a few KiB decoding past PUSH_BODY_LIMIT_BYTES): 413 at the limit, the answer sent, nothing applied', async () => {
      const { url, secret, record } = await pushedDelegation('T1');
      const padded = { ...completedPush('T1'), metadata: { pad: 'x'.repeat(4 * PUSH_BODY_LIMIT_BYTES) } };
      const bomb = zlib.gzipSync(JSON.stringify(padded), { level: 9 });
      expect(bomb.length).toBeLessThan(PUSH_BODY_LIMIT_BYTES / 64);
      const response = await post(url, secret, bomb, 'gzip');
      expect(response.statusCode).toBe(413);
      expect(await response.body.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
      expect((await record()).state).toBe('SUBMITTED');
    });
  });
});

describe('push sent once, then never again (R17)', () => {
  const PREFIX = 'r17';
  let app: ApiServer;
  let fleet: Fleet;
  let producer: Producer;
  let agent: PushConfigAgentHandle;

  beforeAll(async () => {
    agent = await startPushConfigAgent({ pushesSubmittedOnce: true });
    app = startTestServer({ redisUrl: redisServer().url, prefix: PREFIX });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: PREFIX });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX, webhookUrl: `http://127.0.0.1:${port}/v1/push` });
  });
  afterAll(async () => {
    await fleet?.close();
    await app?.close();
    await producer?.close();
    await agent?.close();
  });

  it('the fallback GetTask finds COMPLETED; late duplicate COMPLETED pushes change nothing', async () => {
    await producer.startWorkflow({ workflowId: 'r17-1', steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'go' }, push: true }] });
    const ref = { workflowId: 'r17-1', delegationId: 'main.1' };
    // The agent got our webhook config and pushed SUBMITTED once: taken (204), or refused (403) when it
    // arrived before our task id was journaled (a push applies only to the task id we recorded).
    await eventually(async () => agent.pushStatuses.length > 0, 'the one push');
    expect(agent.pushStatuses).toHaveLength(1);
    expect([204, 403]).toContain(agent.pushStatuses[0]);
    const config = agent.configs()[0]!;
    expect(config.url).toMatch(/\/v1\/push\/r17-1\/main\.1$/);
    await eventually(async () => (await producer.journal.getDelegation(ref))?.taskId === 'T1', 'task id journaled');
    // Nothing is pushed again: the workers' GetTask fallback sees the completion.
    await agent.complete('done without a push', { push: 'none' });
    const done = await eventually(async () => {
      const view = await producer.get('r17-1');
      return view.state === 'COMPLETED' && view;
    }, 'workflow completed through GetTask');
    expect(done.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', resultText: 'done without a push' });
    expect(agent.readCount()).toBeGreaterThan(0);
    expect(agent.pushStatuses).toHaveLength(1);
    const settled = (await producer.journal.getDelegation(ref))!;

    // Later the COMPLETED push arrives, twice: 2xx, and not one more transition.
    const late = { task: { id: 'T1', contextId: agent.contextId, status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() } } };
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await fetch(config.url, {
        method: 'POST',
        headers: { 'content-type': 'application/a2a+json', authorization: `${config.authentication!.scheme} ${config.authentication!.credentials}` },
        body: JSON.stringify(late),
      });
      expect(response.status).toBe(204);
    }
    const after = (await producer.journal.getDelegation(ref))!;
    expect(after).toMatchObject({ state: 'COMPLETED', version: settled.version });
    expect((await producer.get('r17-1')).state).toBe('COMPLETED');
  });
});
