/**
 * A finished workflow is compacted into one string key (journal/compacted-record.ts, docs/concepts.md "Retention
 * and storage"): at most 1 KB for a single-step delegation with a short message, every reader gives the
 * same records as before, nothing applies to it any more, and a workflow a person may still act on
 * (NEEDS_ATTENTION) or with a delegation still running keeps its hashes.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { Journal, JournalError, type DelegationRef } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let journal: Journal;
let counter = 0;
let workflowId: string;

/** Every key of a workflow, with its type and MEMORY USAGE (SAMPLES 0). */
async function workflowKeys(prefix: string, id: string): Promise<{ key: string; type: string; bytes: number }[]> {
  const keys = (await (redis() as Redis).keys(`${prefix}:{wf:${id}}:*`)).sort();
  return Promise.all(keys.map(async (key) => ({ key, type: await redis().type(key), bytes: Number(await redis().call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) })));
}

const definition = (id: string, steps: string[]) =>
  JSON.stringify({ workflowId: id, steps: steps.map((name) => ({ name, agent: 'http://agent.example/.well-known/agent-card.json', message: { text: `do ${name}` } })), maxAttemptsPerStep: 1 });

const intent = (id: string, step: string, attempt = 1) => ({
  workflowId: id,
  delegationId: `${step}.${attempt}`,
  step,
  kind: 'step',
  attempt: String(attempt),
  agentCardUrl: 'http://agent.example/.well-known/agent-card.json',
  messageId: `m-${step}-${attempt}`,
  requestedContextId: `c-${id}`,
  state: 'INTENT',
  message: JSON.stringify({ parts: [{ text: `do ${step}` }], metadata: { durableA2a: { workflowId: id, step, attempt }, mine: { workflowId: id } } }),
  createdAt: '1000',
  updatedAt: '1000',
  version: '1',
  pushToken: `secret-${step}`,
});

/** Runs a delegation through send and a stream to COMPLETED, with an artifact in two chunks. */
async function complete(ref: DelegationRef, taskId: string, firstChunk = 'first '): Promise<void> {
  const fence = await journal.claim(ref, 'worker');
  await journal.markSending(ref, fence, { url: 'http://agent.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
  await journal.applyStatus(ref, { fence, mode: 'event', state: 'WORKING', taskId, contextId: `c-${ref.workflowId}`, statusTimestamp: '2026-01-01T00:00:01.000Z' });
  await journal.applyArtifact(ref, fence, { artifact: { artifactId: `a-${taskId}`, name: 'result', parts: [{ text: firstChunk }] } });
  await journal.applyArtifact(ref, fence, { artifact: { artifactId: `a-${taskId}`, parts: [{ text: 'second' }] }, append: true, lastChunk: true });
  const statusMessage = { messageId: `s-${taskId}`, contextId: `c-${ref.workflowId}`, taskId, role: 'ROLE_AGENT' as const, parts: [{ text: `done ${taskId}` }] };
  await journal.applyStatus(ref, { fence, mode: 'event', state: 'COMPLETED', taskId, statusTimestamp: '2026-01-01T00:00:02.5+01:00', statusMessage });
}

/** A record without the fields compaction leaves out as operational. */
const audit = <T extends object>(record: T | undefined) => {
  // Fields of the running row the compacted record does not keep (COMPACTED_RECORD_LAYOUT `operational`).
  const { notFoundCount: _notFound, sendStartedAt: _sendStarted, artifactCount: _artifactCount, ...rest } = record as T & Record<string, unknown>;
  return rest;
};

beforeEach(async () => {
  journal = new Journal(redis(), { prefix: `cr${++counter}`, retentionMs: 60_000, now: () => 5_000 });
  workflowId = `wf-${counter}`;
});

describe('compacted record', () => {
  it('a finished two-step workflow with artifacts reads back the same; only its one string key is left, with the retention TTL', async () => {
    await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: definition(workflowId, ['hotel', 'flight']), createdAt: '1000' }, intent(workflowId, 'hotel'));
    await journal.createIntent(workflowId, intent(workflowId, 'flight'));
    const refs = [{ workflowId, delegationId: 'hotel.1' }, { workflowId, delegationId: 'flight.1' }];
    for (const [index, ref] of refs.entries()) await complete(ref, `T${index}`);
    const before = {
      workflow: await journal.getWorkflow(workflowId),
      views: await Promise.all(refs.map((ref) => journal.getDelegationView(ref))),
      records: await Promise.all(refs.map((ref) => journal.getDelegation(ref))),
      tokens: await Promise.all(refs.map((ref) => journal.pushToken(ref))),
    };
    expect(before.views[0]!.artifacts).toEqual([{ artifactId: 'a-T0', parts: [{ text: 'first ' }, { text: 'second' }] }]);
    const version = before.workflow!.version;
    expect(await journal.updateWorkflow(workflowId, { state: 'COMPLETED' }, version)).toBe(version + 1);

    const keys = await workflowKeys(`cr${counter}`, workflowId);
    // The record, and beside it the push tokens (a push is authenticated without reading the record).
    expect(keys.map(({ key, type }) => [key, type])).toEqual([[journal.keys.finished(workflowId), 'string'], [journal.keys.finishedPushTokens(workflowId), 'hash']]);
    expect(await redis().pttl(journal.keys.finished(workflowId))).toBeGreaterThan(50_000);
    expect(await redis().pttl(journal.keys.finishedPushTokens(workflowId))).toBeGreaterThan(50_000);
    expect(await journal.getWorkflow(workflowId)).toEqual({ ...before.workflow, state: 'COMPLETED', version: version + 1, updatedAt: 5_000 });
    expect((await Promise.all(refs.map((ref) => journal.getDelegationView(ref)))).map(audit)).toEqual(before.views.map(audit));
    expect((await Promise.all(refs.map((ref) => journal.getDelegation(ref)))).map(audit)).toEqual(before.records.map(audit));
    expect(await Promise.all(refs.map((ref) => journal.pushToken(ref)))).toEqual(before.tokens);
    expect(await journal.delegationIds(workflowId)).toEqual(['hotel.1', 'flight.1']);
    expect(await journal.workflowStates([workflowId, 'none'])).toEqual(['COMPLETED', undefined]);
    expect((await journal.getWorkflowDefinition(workflowId))?.steps.map((step) => step.name)).toEqual(['hotel', 'flight']);
    // The agent's own values equal to a mark are never confused with it.
    expect(before.records[0]!.message.metadata).toEqual({ durableA2a: { workflowId, step: 'hotel', attempt: 1 }, mine: { workflowId } });
  });

  it('nothing applies to a compacted workflow and nothing is recreated: late status, artifact, claim, intent, create', async () => {
    await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: definition(workflowId, ['main']), createdAt: '1000' }, intent(workflowId, 'main'));
    const ref = { workflowId, delegationId: 'main.1' };
    await complete(ref, 'T1');
    await journal.updateWorkflow(workflowId, { state: 'COMPLETED' });
    const text = await redis().get(journal.keys.finished(workflowId));

    expect(await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1', statusTimestamp: '2099-01-01T00:00:00Z' })).toEqual({ applied: false, reason: 'finished' });
    expect(await journal.applyStatus(ref, { mode: 'outcome', state: 'FAILED', error: { code: 'INTERNAL_ERROR', message: 'late' } })).toEqual({ applied: false, reason: 'finished' });
    expect(await journal.applyArtifact(ref, undefined, { artifact: { artifactId: 'late', parts: [{ text: 'x' }] } })).toBe('finished');
    const refusal = (promise: Promise<unknown>) => promise.then(() => 'accepted', (error: unknown) => (error instanceof JournalError ? error.code : String(error)));
    expect(await refusal(journal.claim(ref, 'late-worker'))).toBe('DELEGATION_MISSING');
    expect(await refusal(journal.updateWorkflow(workflowId, { state: 'RUNNING' }))).toBe('WRONG_STATE');
    expect(await refusal(journal.createIntent(workflowId, intent(workflowId, 'main', 2)))).toBe('DELEGATION_MISSING');
    expect(await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: definition(workflowId, ['main']) }, intent(workflowId, 'main'))).toBe(false);

    expect((await workflowKeys(`cr${counter}`, workflowId)).map(({ key }) => key)).toEqual([journal.keys.finished(workflowId), journal.keys.finishedPushTokens(workflowId)]);
    expect(await redis().get(journal.keys.finished(workflowId))).toBe(text);
    expect((await journal.getDelegation(ref))?.state).toBe('COMPLETED');
  });

  it('a workflow with 4,100 finished delegations (over 8,000 keys, past Lua\'s unpack limit) is compacted and every hash deleted', async () => {
    await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: definition(workflowId, ['main']), createdAt: '1000' }, intent(workflowId, 'main'));
    const attempts = Array.from({ length: 4_100 }, (_, index) => index + 1);
    const slim = (attempt: number) => ({ ...intent(workflowId, 'main', attempt), message: JSON.stringify({ parts: [{ text: 'x' }] }), pushToken: undefined });
    for (let first = 1; first < attempts.length; first += 200) {
      await Promise.all(attempts.slice(first, first + 200).map((attempt) => journal.createIntent(workflowId, slim(attempt) as never)));
    }
    for (let first = 0; first < attempts.length; first += 200) {
      await Promise.all(
        attempts.slice(first, first + 200).map((attempt) => journal.applyStatus({ workflowId, delegationId: `main.${attempt}` }, { mode: 'outcome', state: 'COMPLETED', result: { n: attempt } })),
      );
    }
    await journal.updateWorkflow(workflowId, { state: 'COMPLETED' });
    expect((await workflowKeys(`cr${counter}`, workflowId)).map(({ key }) => key)).toEqual([journal.keys.finished(workflowId), journal.keys.finishedPushTokens(workflowId)]);
    expect((await journal.delegationIds(workflowId)).length).toBe(4_100);
    expect((await journal.getDelegation({ workflowId, delegationId: 'main.4100' }))?.state).toBe('COMPLETED');
  }, 120_000);

  it('NEEDS_ATTENTION, a finished state while a delegation still runs, and a record over 1 MiB keep the hashes', async () => {
    await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: definition(workflowId, ['main']), createdAt: '1000' }, intent(workflowId, 'main'));
    const ref = { workflowId, delegationId: 'main.1' };
    await complete(ref, 'T1');
    await journal.updateWorkflow(workflowId, { state: 'NEEDS_ATTENTION', attention: { code: 'EFFECT_UNKNOWN', message: 'look' } });
    expect((await workflowKeys(`cr${counter}`, workflowId)).map(({ type }) => type).sort()).toEqual(['hash', 'hash', 'hash', 'list']);
    expect(await redis().exists(journal.keys.finished(workflowId))).toBe(0);

    const running = `${workflowId}-running`;
    await journal.createWorkflow(running, { state: 'RUNNING', definition: definition(running, ['main']), createdAt: '1000' }, intent(running, 'main'));
    await journal.updateWorkflow(running, { state: 'CANCELED' });
    expect(await redis().exists(journal.keys.finished(running))).toBe(0);
    expect(await redis().pttl(journal.keys.delegation(running, 'main.1'))).toBeGreaterThan(50_000);

    // Over 1 MiB of artifacts: the hashes stay (one key stays small), and expire.
    const large = `${workflowId}-large`;
    await journal.createWorkflow(large, { state: 'RUNNING', definition: definition(large, ['main']), createdAt: '1000' }, intent(large, 'main'));
    const largeRef = { workflowId: large, delegationId: 'main.1' };
    await complete(largeRef, 'T2', 'x'.repeat(1_100_000));
    await journal.updateWorkflow(large, { state: 'COMPLETED' });
    expect(await redis().exists(journal.keys.finished(large))).toBe(0);
    expect((await journal.getDelegationView(largeRef))?.artifacts[0]?.parts[0]?.text).toHaveLength(1_100_000);
    expect(await redis().pttl(journal.keys.artifacts(large, 'main.1'))).toBeGreaterThan(50_000);
  });
});

describe('through the fleet', () => {
  let producer: Producer;
  let fleet: Fleet;
  let agent: DemoAgentHandle;
  const prefix = 'crfleet';
  beforeAll(async () => {
    agent = await startDemoAgent({ behaviour: () => [{ state: 'WORKING' }, { state: 'COMPLETED', text: 'Volt echo: book a table' }] });
    producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
  });
  afterAll(async () => {
    await fleet?.close();
    await producer?.close();
    await agent?.close();
  });

  it('a finished single-step delegation with a short message takes at most 1 KB; its message and status message stay readable', async () => {
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: 'compact-1f4e2a6b-9c1d-4e8f-a0b2-3c4d5e6f7a8b' });
    // Once the follow lease is released, the compacted record is the workflow's only key.
    const keys = await eventually(async () => {
      const found = await workflowKeys(prefix, id);
      return found.length === 1 && found[0]!.key === producer.journal.keys.finished(id) && found;
    }, 'compacted, lease released');
    expect(keys.map(({ type }) => type)).toEqual(['string']);
    expect(keys.reduce((sum, { bytes }) => sum + bytes, 0)).toBeLessThanOrEqual(1024);
    const view = await producer.get(id);
    const attempt = view.steps[0]!.attempts[0]!;
    expect(view.state).toBe('COMPLETED');
    // The view shows the step's message in the definition (attempt rows leave it out); the journal keeps the one sent.
    expect(view.definition.steps[0]!.message).toMatchObject({ text: 'book a table' });
    const sent = await producer.journal.getDelegation({ workflowId: id, delegationId: attempt.delegationId });
    expect(sent?.message).toEqual({ parts: [{ text: 'book a table' }], metadata: { durableA2a: { workflowId: id, step: 'main', attempt: 1 } } });
    expect(attempt.statusMessage?.parts[0]?.text).toBe('Volt echo: book a table');
    expect(attempt.resultText).toBe('Volt echo: book a table');
    expect(attempt.statusMessage).toMatchObject({ taskId: attempt.taskId, contextId: attempt.contextId });
    // The same idempotency key finds the finished workflow; nothing new is created.
    expect(await producer.delegate({ agent: agent.cardUrl, text: 'book a table', idempotencyKey: 'compact-1f4e2a6b-9c1d-4e8f-a0b2-3c4d5e6f7a8b' })).toMatchObject({ id, created: false });
    expect((await workflowKeys(prefix, id)).length).toBe(1);
  });
});
