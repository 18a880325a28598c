/**
 * Attacks on the compacted record of a finished workflow (journal/compacted-record.ts, updateWorkflow-2.lua):
 * whatever an agent puts into what is kept (status message, result, artifacts), the record read back after
 * compaction equals the record before it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import fc from 'fast-check';
import { createRedisClient, Journal, type Artifact, type DelegationRef, type Message } from '@durable-a2a/shared';
import { useRedisServer } from './harness/redis.ts';

const redisServer = useRedisServer();
let redis: Redis;
let journal: Journal;
let counter = 0;
let workflowId: string;

const AGENT = 'http://agent.example/.well-known/agent-card.json';
const definition = (id: string) => JSON.stringify({ workflowId: id, steps: [{ name: 'main', agent: AGENT, message: { text: 'do' } }], maxAttemptsPerStep: 1 });
const intent = (id: string) => ({
  workflowId: id,
  delegationId: 'main.1',
  step: 'main',
  kind: 'step',
  attempt: '1',
  agentCardUrl: AGENT,
  messageId: 'm-1',
  requestedContextId: `c-${id}`,
  state: 'INTENT',
  message: JSON.stringify({ parts: [{ text: 'do' }], metadata: { durableA2a: { workflowId: id, step: 'main', attempt: 1 } } }),
  createdAt: '1000',
  updatedAt: '1000',
  version: '1',
});

beforeAll(() => {
  redis = createRedisClient(redisServer().url) as Redis;
});
afterAll(async () => {
  await redis.quit();
});
beforeEach(() => {
  journal = new Journal(redis, { prefix: `ac${++counter}`, retentionMs: 60_000, now: () => 5_000 });
  workflowId = `wf-${counter}`;
});

/** Finishes one delegation with the agent's `statusMessage`, then the workflow; returns the record before and after compaction. */
async function compactWith(statusMessage: Message, taskId = 'T1', contextId = `c-${workflowId}`, artifacts: Artifact[] = []) {
  await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: definition(workflowId), createdAt: '1000' }, intent(workflowId));
  const ref: DelegationRef = { workflowId, delegationId: 'main.1' };
  const fence = await journal.claim(ref, 'worker');
  await journal.markSending(ref, fence);
  await journal.applyStatus(ref, { fence, mode: 'event', state: 'WORKING', taskId, contextId, agentCardUrl: AGENT });
  for (const artifact of artifacts) await journal.applyArtifact(ref, fence, { artifact, append: true });
  await journal.applyStatus(ref, { fence, mode: 'event', state: 'COMPLETED', taskId, statusMessage, statusTimestamp: '2026-01-01T00:00:02Z' });
  const before = await journal.getDelegationView(ref);
  await journal.updateWorkflow(workflowId, { state: 'COMPLETED' });
  expect(await redis.exists(journal.keys.finished(workflowId))).toBe(1);
  const after = await journal.getDelegationView(ref);
  const { notFoundCount: _a, sendStartedAt: _b, ...beforeAudit } = before!;
  const { notFoundCount: _c, sendStartedAt: _d, ...afterAudit } = after!;
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

  it('a definition whose step message carries workflowId "=" reads back unchanged', async () => {
    const text = JSON.stringify({ workflowId, steps: [{ name: 'main', agent: AGENT, message: { text: 'do', metadata: { workflowId: '=' } } }], maxAttemptsPerStep: 1 });
    await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: text, createdAt: '1000' });
    const before = await journal.getWorkflow(workflowId);
    await journal.updateWorkflow(workflowId, { state: 'CANCELED' });
    expect(await redis.exists(journal.keys.finished(workflowId))).toBe(1);
    expect((await journal.getWorkflow(workflowId))?.definition).toEqual(before!.definition);
  });
});

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
      return fc.record({ taskId: fc.constant(taskId), contextId: fc.constant(contextId), statusMessage, artifacts });
    });
    await fc.assert(
      fc.asyncProperty(agentInput, async ({ taskId, contextId, statusMessage, artifacts }) => {
        journal = new Journal(redis, { prefix: `ac${++counter}`, retentionMs: 60_000, now: () => 5_000 });
        workflowId = `wf-${counter}`;
        const { before, after } = await compactWith(statusMessage as Message, taskId, contextId, artifacts as Artifact[]);
        expect(after).toEqual(before);
      }),
      { numRuns: 100, seed: Number(process.env.FUZZ_SEED ?? 7) },
    );
  });
});
