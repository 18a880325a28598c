/**
 * applyStatus-5.lua reads the row's Agent Card URL and `artifactBytes` only on the paths that need them (not in its
 * HMGET, which every change pays): a task id the caller sent without the card (TASK_NOT_BOUND, the journal binds it
 * and runs the change again) is bound under the row's own card, and a finished Task's list replaces the artifacts
 * an update stored before it (the held hash deleted first), whether the caller holds the row at its version (the
 * change reply) or not (the row whole). Real redis-server, real journal scripts.
 */
import { describe, expect, it } from 'vitest';
import { indexMember, Journal, type DelegationRecord, type DelegationRef } from '@durable-a2a/shared';
import { intentRow } from '../harness/journal-rows.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const CARD = 'http://card.example/.well-known/agent-card.json';
let counter = 0;

/** A RUNNING workflow whose delegation main.1 is in INTENT with agent card CARD, and that record as read back. */
async function intent(): Promise<{ journal: Journal; ref: DelegationRef; record: DelegationRecord }> {
  const journal = new Journal(redis(), { prefix: `sfr${++counter}` });
  const ref = { workflowId: `wf${counter}`, delegationId: 'main.1' };
  const definition = JSON.stringify({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: CARD, message: { text: 'x' } }] });
  await journal.createWorkflow(ref.workflowId, { state: 'RUNNING', definition, createdAt: '1000' }, { ...intentRow(ref.workflowId), agentCardUrl: CARD });
  return { journal, ref, record: (await journal.getDelegation(ref))! };
}

describe('applyStatus: fields read only where a transition needs them', () => {
  for (const held of [true, false]) {
    it(`a task id sent without the card is bound under the row's card (${held ? 'change reply' : 'row whole'})`, async () => {
      const { journal, ref, record } = await intent();
      const result = await journal.applyStatus(ref, { mode: 'snapshot', state: 'SUBMITTED', taskId: 'T1', ...(held ? { held: record } : {}) });
      expect(result.applied).toBe(true);
      expect((await journal.getDelegation(ref))!.taskId).toBe('T1');
      expect(await redis().get(journal.keys.taskOwner(CARD, 'T1'))).toBe(indexMember(ref.workflowId, ref.delegationId));
    });

    it(`a finished Task's artifacts replace those an update stored (${held ? 'change reply' : 'row whole'})`, async () => {
      const { journal, ref } = await intent();
      await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: 'T1', agentCardUrl: CARD });
      await journal.applyArtifact(ref, undefined, { artifact: { artifactId: 'old', parts: [{ text: 'draft' }] } });
      const before = (await journal.getDelegation(ref))!;
      const result = await journal.applyStatus(ref, {
        mode: 'snapshot',
        state: 'COMPLETED',
        taskId: 'T1',
        artifacts: [{ artifactId: 'final', parts: [{ text: 'done' }] }],
        ...(held ? { held: before } : {}),
      });
      expect(result.applied).toBe(true);
      const view = (await journal.getDelegationView(ref))!;
      expect(view.artifacts.map((artifact) => artifact.artifactId)).toEqual(['final']);
    });
  }
});
