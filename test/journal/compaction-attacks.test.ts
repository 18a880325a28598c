/**
 * Attacks on the compacted record of a finished workflow (journal/compacted-record.ts, updateWorkflow-4.lua):
 * whatever an agent puts into what is kept (status message, result, artifacts), the record read back after
 * compaction equals the record before it.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import fc from 'fast-check';
import { readFile } from 'node:fs/promises';
import { Queue } from 'bullmq';
import { createProducer } from '@durable-a2a/producer';
import type { Artifact, Message } from '@durable-a2a/a2a';
import { applyTask, createRedisClient, Journal, parseWorkflowHash, queuePrefix, workflowSummaries, type DelegationRef } from '@durable-a2a/shared';
import { startTestServer } from '../harness/api-server.ts';
import { startRedisServer, useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);
let journal: Journal;
let counter = 0;
let workflowId: string;

const AGENT = 'http://agent.example/.well-known/agent-card.json';
/** `user`: metadata the user put on the step's message (in the definition and in the message sent). */
const definition = (id: string, user?: unknown) =>
  JSON.stringify({ workflowId: id, steps: [{ name: 'main', agent: AGENT, message: { text: 'do', ...(user === undefined ? {} : { metadata: { user } }) } }], maxAttemptsPerStep: 1 });
const intent = (id: string, user?: unknown) => ({
  workflowId: id,
  delegationId: 'main.1',
  step: 'main',
  kind: 'step',
  attempt: '1',
  agentCardUrl: AGENT,
  messageId: 'm-1',
  requestedContextId: `c-${id}`,
  state: 'INTENT',
  message: JSON.stringify({ parts: [{ text: 'do' }], metadata: { ...(user === undefined ? {} : { user }), durableA2a: { workflowId: id, step: 'main', attempt: 1 } } }),
  createdAt: '1000',
  updatedAt: '1000',
  version: '1',
});

beforeEach(() => {
  journal = new Journal(redis(), { prefix: `ac${++counter}`, retentionMs: 60_000, now: () => 5_000 });
  workflowId = `wf-${counter}`;
});

/** Finishes one delegation with the agent's `statusMessage`, then the workflow; returns the record before and after compaction. */
async function compactWith(statusMessage: Message, taskId = 'T1', contextId = `c-${workflowId}`, artifacts: Artifact[] = [], user?: unknown) {
  await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: definition(workflowId, user), createdAt: '1000' }, intent(workflowId, user));
  const ref: DelegationRef = { workflowId, delegationId: 'main.1' };
  const fence = await journal.claim(ref, 'worker');
  await journal.markSending(ref, fence);
  await journal.applyStatus(ref, { fence, mode: 'event', state: 'WORKING', taskId, contextId, agentCardUrl: AGENT });
  for (const artifact of artifacts) await journal.applyArtifact(ref, fence, { artifact, append: true });
  await journal.applyStatus(ref, { fence, mode: 'event', state: 'COMPLETED', taskId, statusMessage, statusTimestamp: '2026-01-01T00:00:02Z' });
  const before = await journal.getDelegationView(ref);
  await journal.updateWorkflow(workflowId, { state: 'COMPLETED' });
  expect(await redis().exists(journal.keys.finished(workflowId))).toBe(1);
  const after = await journal.getDelegationView(ref);
  const { notFoundCount: _a, sendStartedAt: _b, artifactCount: _e, ...beforeAudit } = before!;
  const { notFoundCount: _c, sendStartedAt: _d, artifactCount: _f, ...afterAudit } = after!;
  return { before: beforeAudit, after: afterAudit };
}

describe('compacted record: marks never land on an agent\'s own text', () => {
  it('a metadata key ending in "contextId (an escaped quote) holding our context id reads back unchanged', async () => {
    const contextId = `c-${workflowId}`;
    const { before, after } = await compactWith({ messageId: 's1', role: 'ROLE_AGENT', parts: [{ text: 'done' }], metadata: { '"contextId': contextId } });
    expect(after.statusMessage).toEqual(before.statusMessage);
  });

  it('a part metadata key ending in "taskId holding our task id reads back unchanged', async () => {
    const { before, after } = await compactWith({ messageId: 's1', role: 'ROLE_AGENT', parts: [{ text: 'done', metadata: { 'x"taskId': 'T1' } }] });
    expect(after.statusMessage).toEqual(before.statusMessage);
  });
});

/** Text an agent may choose: pieces of our own ids, marks, quotes, escapes and JSON syntax. */
const pieces = (ids: string[]) => fc.array(fc.constantFrom(...ids, '"', '\\', '/', '=', '"="', ':', ',', '{', '}', 'contextId', 'taskId', 'durableA2a', 'é', '\u0001', '\u007f', '\u2028', 'x'), { maxLength: 6 }).map((list) => list.join(''));

describe('compacted record: an agent\'s own "=" is never taken for a mark', () => {
  it('a status message whose metadata holds taskId "=" and contextId "=" reads back unchanged', async () => {
    const { before, after } = await compactWith({ messageId: 's1', role: 'ROLE_AGENT', parts: [{ text: 'done' }], metadata: { taskId: '=', contextId: '=' } });
    expect(after.statusMessage).toEqual(before.statusMessage);
    expect(after.statusMessage?.metadata).toEqual({ taskId: '=', contextId: '=' });
  });

  it('a definition whose step message carries workflowId "=" reads back unchanged, and so do its delegations (agent left out as the step\'s)', async () => {
    const text = JSON.stringify({ workflowId, steps: [{ name: 'main', agent: AGENT, message: { text: 'do', metadata: { workflowId: '=' } } }], maxAttemptsPerStep: 1 });
    await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: text, createdAt: '1000' }, intent(workflowId));
    const ref = { workflowId, delegationId: 'main.1' };
    await journal.applyStatus(ref, { mode: 'outcome', state: 'CANCELED', error: { code: 'NEVER_SENT', message: 'stopped' } });
    const before = { workflow: await journal.getWorkflow(workflowId), view: await journal.getDelegationView(ref) };
    await journal.updateWorkflow(workflowId, { state: 'CANCELED' });
    expect(await redis().exists(journal.keys.finished(workflowId))).toBe(1);
    expect((await journal.getWorkflow(workflowId))?.definition).toEqual(before.workflow!.definition);
    expect(await journal.getDelegationView(ref)).toEqual(before.view);
  });
});

/** The property's workflow id (each run has its own key prefix): the user's metadata may hold it, as marks would. */
const PROPERTY_WORKFLOW = 'wf-p';

describe('compacted record: property', () => {
  it('whatever ids, status message, metadata and artifacts an agent sends, the compacted record reads back the same', async () => {
    const idText = pieces(['T', 'C', '1']).filter((text) => text.length > 0);
    const agentInput = fc.tuple(idText, idText).chain(([taskId, contextId]) => {
      const text = pieces([taskId, contextId, `"${taskId}"`, `"${contextId}"`]);
      const value: fc.Arbitrary<unknown> = fc.oneof(fc.constantFrom(taskId, contextId, '=', 1, null), text, fc.dictionary(text, fc.constantFrom(taskId, contextId, '=')));
      const metadata = fc.dictionary(fc.oneof(fc.constantFrom('contextId', 'taskId', '"contextId', 'x"taskId', 'durableA2a', '='), text), value, { maxKeys: 4 });
      const statusMessage = fc.record(
        {
          messageId: text.filter((id) => id.length > 0),
          contextId: fc.constantFrom(contextId, 'other'),
          taskId: fc.constantFrom(taskId, 'other'),
          role: fc.constant('ROLE_AGENT' as const),
          parts: fc.array(fc.record({ text, metadata }, { requiredKeys: ['text'] }), { minLength: 1, maxLength: 2 }),
          metadata,
        },
        { requiredKeys: ['messageId', 'role', 'parts'] },
      );
      const artifacts = fc.array(fc.record({ artifactId: text.filter((id) => id.length > 0), parts: fc.array(fc.record({ text }), { minLength: 1, maxLength: 2 }), metadata }, { requiredKeys: ['artifactId', 'parts'] }), {
        maxLength: 2,
      });
      // What the user put on the step's message: the same pieces, our workflow id and its marks included.
      // A long value puts the workflow object past the first read of its row (4 KiB): quotes, braces and escapes across it.
      const long = fc.constant('{"}\\]'.repeat(1_500));
      const user = fc.option(fc.dictionary(fc.constantFrom('workflowId', 'durableA2a', 'x"workflowId', '='), fc.oneof(value, long, fc.constant(PROPERTY_WORKFLOW), fc.constant({ workflowId: PROPERTY_WORKFLOW, step: 'main', attempt: 1 }))), { nil: undefined });
      return fc.record({ taskId: fc.constant(taskId), contextId: fc.constant(contextId), statusMessage, artifacts, user });
    });
    await fc.assert(
      fc.asyncProperty(agentInput, async ({ taskId, contextId, statusMessage, artifacts, user }) => {
        journal = new Journal(redis(), { prefix: `ac${++counter}`, retentionMs: 60_000, now: () => 5_000 });
        workflowId = PROPERTY_WORKFLOW;
        const { before, after } = await compactWith(statusMessage as Message, taskId, contextId, artifacts as Artifact[], user);
        expect(after).toEqual(before);
        expect((await journal.getWorkflow(workflowId))?.definitionText).toBe(definition(workflowId, user));
        // The row read from the start of the record is the row of the whole record.
        expect(await journal.getWorkflow(workflowId)).toEqual(parseWorkflowHash((await journal.finishedWorkflow(workflowId))!.workflow));
      }),
      { numRuns: 100, seed: Number(process.env.FUZZ_SEED ?? 7) },
    );
  });
});

describe('late pushes for a compacted workflow', () => {
  it('ours, foreign, regressing, whole-Task and artifact pushes: authenticated, nothing applied, no key recreated, no index entry, no reconcile job', async () => {
    const prefix = `acpush${++counter}`;
    const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    const app = startTestServer({ redisUrl: redisServer().url, prefix });
    const reconcile = new Queue('reconcile', { connection: redis(), prefix: queuePrefix(prefix) });
    try {
      await app.ready();
      const id = `late-push-${counter}`;
      await producer.startWorkflow({ workflowId: id, steps: [{ name: 'main', agent: `http://127.0.0.1:9/${id}`, message: { text: 'go' }, push: true }] });
      const ref = { workflowId: id, delegationId: 'main.1' };
      const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)).toISOString();
      await applyTask(producer.journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING', timestamp: at(1) } }, { snapshot: true, agentCardUrl: `http://127.0.0.1:9/${id}` });
      await applyTask(producer.journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED', timestamp: at(2) }, artifacts: [{ artifactId: 'a1', parts: [{ text: 'done' }] }] }, { snapshot: true });
      const secret = (await producer.journal.pushToken(ref))!;
      await producer.journal.updateWorkflow(id, { state: 'COMPLETED' });
      await redis().zrem(producer.journal.keys.unfinished(), `${id}|main.1`, `${id}|*`);
      const done = producer.journal.keys.finished(id);
      const text = await redis().get(done);
      expect(text).toBeTruthy();

      const pushes = [
        { artifactUpdate: { taskId: 'T1', contextId: 'C1', artifact: { artifactId: 'late', parts: [{ text: 'late' }] } } },
        { artifactUpdate: { taskId: 'T1', contextId: 'C1', artifact: { artifactId: 'a1', parts: [{ text: ' more' }] }, append: true } },
        { statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING', timestamp: at(9) } } },
        { statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_FAILED', timestamp: at(9) } } },
        { task: { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED', timestamp: at(9) }, artifacts: [{ artifactId: 'a1', parts: [{ text: 'changed' }] }] } },
        { statusUpdate: { taskId: 'T2', contextId: 'C1', status: { state: 'TASK_STATE_WORKING', timestamp: at(9) } } },
      ];
      const statuses = [];
      for (const payload of pushes) {
        const response = await app.inject({ method: 'POST', url: `/v1/push/${id}/main.1`, payload, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/a2a+json' } });
        statuses.push(response.statusCode);
      }
      expect(statuses).toEqual([204, 204, 204, 204, 204, 403]); // the foreign task: TASK_MISMATCH
      expect((await redis().keys(`${prefix}:{wf:${id}}:*`)).sort()).toEqual([done, producer.journal.keys.finishedPushTokens(id)]);
      expect(await redis().get(done)).toBe(text);
      expect(await producer.journal.nextCheckAt(ref)).toBeUndefined();
      expect((await reconcile.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed'])).filter((job) => job.data.workflowId === id)).toHaveLength(0);
    } finally {
      await reconcile.close();
      await app.close();
      await producer.close();
    }
  });
});

describe('a finished workflow far over the compacted record\'s size', () => {
  it('is left as hashes without building its whole record first: Redis\'s peak memory grows by far less than the record', async () => {
    const server = await startRedisServer();
    const client = createRedisClient(server.url) as Redis;
    try {
      // Status messages kept whole up to 8 MiB (a fleet configured so: the default bound is 64 KiB).
      const big = new Journal(client, { prefix: 'huge', retentionMs: 60_000, now: () => 5_000, statusMessageBytes: 8 * 1024 * 1024 });
      const id = 'wf-huge';
      await big.createWorkflow(id, { state: 'RUNNING', definition: definition(id), createdAt: '1000' }, intent(id));
      const refs = Array.from({ length: 12 }, (_, index) => ({ workflowId: id, delegationId: `main.${index + 1}` }));
      for (const ref of refs.slice(1)) await big.createIntent(id, { ...intent(id), delegationId: ref.delegationId, attempt: ref.delegationId.slice(5) });
      // An agent's final status message may be as large as one stream event (8 MiB) under that bound: 4 MiB each here,
      // 48 MiB in all.
      const text = 'x'.repeat(4 * 1024 * 1024);
      for (const ref of refs) await big.applyStatus(ref, { mode: 'outcome', state: 'COMPLETED', statusMessage: { messageId: 's', role: 'ROLE_AGENT', parts: [{ text }] } });
      // The server's peak resident memory (Lua's heap is not in INFO's used_memory): VmHWM, in KiB.
      const pid = Number(/process_id:(\d+)/.exec(await client.info('server'))![1]);
      const peak = async () => 1024 * Number(/VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]);
      const before = await peak();
      await big.updateWorkflow(id, { state: 'COMPLETED' });
      expect(await client.exists(big.keys.finished(id))).toBe(0);
      expect((await big.getDelegation(refs[11]!))?.statusMessage?.parts[0]?.text).toHaveLength(text.length);
      // Building the whole 48 MiB record (copies, then the join) before finding it too large grew it by ~300 MiB;
      // now by the encoding of one delegation's record at most (~3 copies of its 4 MiB).
      expect(await peak()).toBeLessThan(before + 32 * 1024 * 1024);
    } finally {
      await client.quit();
      await server.stop();
    }
  }, 60_000);
});

describe('a workflow that needed attention, was abandoned and compensated', () => {
  it('reads back the same after compaction: attention cleared, approvals, stopping reasons, failure, the undo and its handler', async () => {
    await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: definition(workflowId), createdAt: '1000' }, intent(workflowId));
    const step = { workflowId, delegationId: 'main.1' };
    await journal.applyStatus(step, { mode: 'outcome', state: 'AMBIGUOUS', error: { code: 'AMBIGUOUS', message: 'cannot tell "=" apart' } });
    await journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention: { code: 'AMBIGUOUS_SEND', message: 'look', delegationId: 'main.1' } });
    await journal.updateWorkflow(workflowId, { state: 'RUNNING', attention: null, cancelRequested: true, stopping: ['abandoned by a person (AMBIGUOUS_SEND): look'], retryApproved: ['main.1'] });
    await journal.recordEffect(step, 'present', { found: 'booking 7', note: '=' });
    await journal.updateWorkflow(workflowId, { state: 'COMPENSATING', failure: ['abandoned'] });
    const undo = { ...intent(workflowId), delegationId: 'main.1.undo', kind: 'compensation', agentCardUrl: 'handler:cancel-booking', messageId: 'm-undo', message: JSON.stringify({ parts: [{ text: 'undo' }], metadata: { durableA2a: { workflowId, compensates: { step: 'main', delegationId: 'main.1' } } } }) };
    await journal.createIntent(workflowId, undo);
    await journal.applyStatus({ workflowId, delegationId: 'main.1.undo' }, { mode: 'outcome', state: 'COMPLETED', result: { message: { messageId: 'r', role: 'ROLE_AGENT', parts: [{ text: 'undone' }] } } });
    const refs = [step, { workflowId, delegationId: 'main.1.undo' }];
    const before = { workflow: await journal.getWorkflow(workflowId), views: await Promise.all(refs.map((ref) => journal.getDelegationView(ref))) };
    const version = before.workflow!.version;
    await journal.updateWorkflow(workflowId, { state: 'COMPENSATED' }, version);
    expect(await redis().exists(journal.keys.finished(workflowId))).toBe(1);
    expect(await journal.getWorkflow(workflowId)).toEqual({ ...before.workflow, state: 'COMPENSATED', version: version + 1, updatedAt: 5_000 });
    expect(await journal.delegationIds(workflowId)).toEqual(['main.1', 'main.1.undo']);
    const strip = <T extends object>(view: T | undefined) => {
      const { notFoundCount: _a, sendStartedAt: _b, artifactCount: _c, ...rest } = view as T & Record<string, unknown>;
      return rest;
    };
    expect((await Promise.all(refs.map((ref) => journal.getDelegationView(ref)))).map(strip)).toEqual(before.views.map(strip));
  });
});

describe('pushes with wrong credentials for a compacted workflow', () => {
  it('cost what they cost before compaction: the token is read, not the whole record (Redis output per push stays small)', async () => {
    const prefix = `acpushcost${++counter}`;
    const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    const app = startTestServer({ redisUrl: redisServer().url, prefix });
    try {
      await app.ready();
      const id = `push-cost-${counter}`;
      const agentUrl = `http://127.0.0.1:9/${id}`;
      await producer.startWorkflow({ workflowId: id, steps: [{ name: 'main', agent: agentUrl, message: { text: 'go' }, push: true }] });
      const ref = { workflowId: id, delegationId: 'main.1' };
      // A record of about 900 KB (under the 1 MiB the compacted record may take).
      const statusMessage = { messageId: 'm', role: 'ROLE_AGENT' as const, parts: [{ text: 'y'.repeat(900_000) }] };
      await applyTask(producer.journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED', message: statusMessage } }, { snapshot: true, agentCardUrl: agentUrl });
      const secret = (await producer.journal.pushToken(ref))!;
      await producer.journal.updateWorkflow(id, { state: 'COMPLETED' });
      expect(await redis().exists(producer.journal.keys.finished(id))).toBe(1);
      const output = async () => Number(/total_net_output_bytes:(\d+)/.exec(await redis().info('stats'))![1]);
      const push = (authorization: string) =>
        app.inject({ method: 'POST', url: `/v1/push/${id}/main.1`, payload: { statusUpdate: { taskId: 'T1', status: { state: 'TASK_STATE_WORKING' } } }, headers: { authorization, 'content-type': 'application/json' } });
      const before = await output();
      for (let index = 0; index < 20; index++) expect((await push(`Bearer wrong-${index}`)).statusCode).toBe(401);
      // Twenty refused pushes read a few hundred bytes each (the token), never the 900 KB record (18 MB before).
      expect((await output()) - before).toBeLessThan(64 * 1024);
      expect(await producer.journal.pushToken(ref)).toBe(secret);
      expect((await push(`Bearer ${secret}`)).statusCode).toBe(204);
    } finally {
      await app.close();
      await producer.close();
    }
  });
});

describe('listing compacted workflows', () => {
  it('reads each workflow\'s row, not its whole record: Redis output stays far below the records\' size; states and summaries as before', async () => {
    const big = new Journal(redis(), { prefix: `aclist${++counter}`, retentionMs: 60_000, now: () => 5_000 });
    const ids = Array.from({ length: 10 }, (_, index) => `list-${index}`);
    for (const id of ids) {
      await big.createWorkflow(id, { state: 'RUNNING', definition: definition(id), createdAt: '1000', updatedAt: '1000' }, intent(id));
      // 500 KB of artifacts each (the compacted record keeps them): 5 MB in all.
      await big.applyStatus({ workflowId: id, delegationId: 'main.1' }, { mode: 'snapshot', state: 'COMPLETED', taskId: `T-${id}`, agentCardUrl: AGENT, artifacts: [{ artifactId: 'a1', parts: [{ text: 'z'.repeat(500_000) }] }] });
    }
    await big.updateWorkflow(ids[0]!, { state: 'FAILED', failure: ['it broke'] });
    for (const id of ids.slice(1)) await big.updateWorkflow(id, { state: 'COMPLETED' });
    for (const id of ids) expect(await redis().exists(big.keys.finished(id))).toBe(1);
    const output = async () => Number(/total_net_output_bytes:(\d+)/.exec(await redis().info('stats'))![1]);
    const before = await output();
    const { summaries } = await workflowSummaries(big, ids);
    const states = await big.workflowStates(ids);
    const definitionSteps = (await big.getWorkflowDefinition(ids[1]!))?.steps.map((step) => step.name);
    expect((await output()) - before).toBeLessThan(256 * 1024);
    expect(summaries.map(({ workflowId, state, createdAt, updatedAt }) => [workflowId, state, createdAt, updatedAt])).toEqual(ids.map((id, index) => [id, index === 0 ? 'FAILED' : 'COMPLETED', 1000, 5_000]));
    expect(states).toEqual(ids.map((_, index) => (index === 0 ? 'FAILED' : 'COMPLETED')));
    expect(definitionSteps).toEqual(['main']);
    // The row read alone is the row of the whole record.
    for (const id of ids) expect(await big.getWorkflow(id)).toEqual(parseWorkflowHash((await big.finishedWorkflow(id))!.workflow));
  });
});
