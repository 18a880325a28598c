/**
 * Every byte the journal stores for artifacts counts against `artifactBytesPerDelegation` (B31), the artifacts hash's
 * own fields included (attack 32: 20,000 empty artifacts, each counted about 10 bytes, held 5.8 MB of Redis under a
 * 256 KiB limit). Property, real redis-server: whatever artifact updates and Task lists a delegation takes (many or few,
 * new ids or appended chunks, ids of any length and script, empty or not), Redis's own measure of its artifacts hash
 * stays within the bytes the journal counted, so the limit bounds the memory. And an artifact's entry is counted once:
 * chunks appended to it cost their own bytes (a stream of many small chunks is not charged an entry per chunk).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { storedArtifact } from '@durable-a2a/a2a';
import { Journal } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
/** Redis's cost of the hash key itself (its name, the object header), beside its fields: bytes. */
const KEY_SLACK = 512;
let counter = 0;

const artifactId = fc.oneof(fc.constantFrom('a1', 'a2', 'result'), fc.string({ minLength: 1, maxLength: 64 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 16 }));
const update = fc.record({
  artifactId,
  text: fc.oneof(fc.constant(undefined), fc.string({ maxLength: 40 })),
  append: fc.boolean(),
  lastChunk: fc.boolean(),
});
const taskList = fc.array(fc.record({ artifactId, text: fc.oneof(fc.constant(undefined), fc.string({ maxLength: 40 })) }), { maxLength: 300 });

const artifactOf = (id: string, text: string | undefined) => ({ artifactId: id, parts: text === undefined ? [] : [{ text }] });

describe('the artifacts hash stays within the bytes counted for it', () => {
  it('property: updates (tiny or not, new ids or chunks) and Task lists (running or finished): MEMORY USAGE of the hash <= the counted artifactBytes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(update, { maxLength: 400 }),
        fc.nat({ max: 3_000 }),
        fc.option(fc.record({ list: taskList, finished: fc.boolean() }), { nil: undefined }),
        async (updates, emptyOnes, task) => {
          const prefix = `entry-bytes-${++counter}`;
          // The bytes counted, not the artifacts' count (artifact-count-property.test.ts): up to 3,400 artifacts held.
          const journal = new Journal(redis(), { prefix, retentionMs: 60_000, artifactBytesPerDelegation: 64 * 1024 * 1024, artifactsPerDelegation: 10_000 });
          const ref = { workflowId: `w${counter}`, delegationId: 'main.1' };
          await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId));
          const fence = await journal.claim(ref, 'worker');
          await journal.applyStatus(ref, { fence, mode: 'snapshot', state: 'WORKING', taskId: `t-${counter}`, agentCardUrl: 'http://agent.example/.well-known/agent-card.json' });
          const all: Parameters<Journal['applyArtifact']>[2][] = [
            ...updates.map((entry) => ({ artifact: artifactOf(entry.artifactId, entry.text), append: entry.append, lastChunk: entry.lastChunk })),
            ...Array.from({ length: emptyOnes }, (_, index) => ({ artifact: artifactOf(`x${index}`, undefined), lastChunk: true })),
          ];
          for (const entry of all) await journal.applyArtifact(ref, fence, entry);
          if (task) {
            const artifacts = task.list.map((entry) => artifactOf(entry.artifactId, entry.text));
            await journal.applyStatus(ref, { fence, mode: 'snapshot', state: task.finished ? 'COMPLETED' : 'WORKING', artifacts });
          }
          const key = journal.keys.artifacts(ref.workflowId, ref.delegationId);
          if ((await redis().exists(key)) === 0) return;
          const stored = Number(await redis().call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
          const counted = Number(await redis().hget(journal.keys.delegation(ref.workflowId, ref.delegationId), 'artifactBytes'));
          expect(stored).toBeLessThanOrEqual(counted + KEY_SLACK);
        },
      ),
      { numRuns: 40 },
    );
  }, 240_000);

  it('property: an artifact streamed in chunks is counted its entry once and each chunk its own bytes, exactly; within a limit that holds them, applied', async () => {
    await fc.assert(
      fc.asyncProperty(artifactId, fc.array(fc.string({ maxLength: 24 }), { minLength: 1, maxLength: 200 }), async (id, chunks) => {
        const artifacts = chunks.map((text) => storedArtifact(artifactOf(id, text)));
        // The entry once, then every chunk's meta and parts (each update's bytes without its entry).
        const expected = artifacts[0]!.entryBytes + artifacts.reduce((sum, { bytes, entryBytes }) => sum + bytes - entryBytes, 0);
        const prefix = `entry-chunks-${++counter}`;
        const journal = new Journal(redis(), { prefix, retentionMs: 60_000, artifactBytesPerDelegation: expected });
        const ref = { workflowId: `w${counter}`, delegationId: 'main.1' };
        await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId));
        const fence = await journal.claim(ref, 'worker');
        await journal.applyStatus(ref, { fence, mode: 'snapshot', state: 'WORKING', taskId: `t-${counter}`, agentCardUrl: 'http://agent.example/.well-known/agent-card.json' });
        for (const [index, text] of chunks.entries()) {
          expect(await journal.applyArtifact(ref, fence, { artifact: artifactOf(id, text), append: index > 0, lastChunk: index === chunks.length - 1 })).toBe('applied');
        }
        const row = await redis().hmget(journal.keys.delegation(ref.workflowId, ref.delegationId), 'artifactBytes', 'state');
        expect(row).toEqual([String(expected), 'WORKING']);
      }),
      { numRuns: 40 },
    );
  }, 240_000);
});
