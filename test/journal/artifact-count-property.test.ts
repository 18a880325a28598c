/**
 * Property (attack35): the artifacts one delegation shows are bounded by count (`artifactsPerDelegation`), as their
 * bytes are, whatever an agent sends: artifact updates (new ids, ids held, appended chunks, seals) and unfinished Task
 * snapshots listing any ids, in any order. A Task listing more distinct ids than the limit, or an update naming one
 * id more than the delegation has shown, ends the attempt AMBIGUOUS LIMIT_EXCEEDED naming `artifactsPerDelegation`
 * with nothing of it stored; short of that the attempt goes on. A Task within the limit whose merge with the held ids
 * it leaves out would pass it replaces them instead (as for the bytes), so the artifacts the row holds (what every
 * later Task's script goes over) never pass the limit. Real redis-server, the journal's own scripts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Journal, applyStreamResponse, applyTask } from '@durable-a2a/shared';
import type { Task } from '@durable-a2a/a2a';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const LIMIT = 6;

/** One thing the agent sends: an artifact update of id `a<id>` (append or not, sealing or not), or a WORKING Task listing ids. */
type Sent = { update: number; append: boolean; lastChunk: boolean } | { list: number[] };

const sentArbitrary = fc.oneof(
  { weight: 3, arbitrary: fc.record({ update: fc.nat(14), append: fc.boolean(), lastChunk: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ list: fc.array(fc.nat(14), { maxLength: 12 }) }) },
);

describe('property: artifacts per delegation, by count', () => {
  it('over the count: AMBIGUOUS LIMIT_EXCEEDED artifactsPerDelegation, nothing of it stored; short of it, never; the row never holds more than the limit', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(sentArbitrary, { minLength: 1, maxLength: 25 }), async (sent) => {
        const journal = new Journal(redis(), { prefix: `count${++run}`, retentionMs: 60_000, artifactsPerDelegation: LIMIT });
        const workflowId = `wf${run}`;
        const ref = { workflowId, delegationId: 'main.1' };
        await journal.createWorkflow(workflowId, { state: 'RUNNING' }, intentRow(workflowId));
        await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } } as Task, { snapshot: true });
        const record = { ...(await journal.getDelegation(ref))!, taskId: 'T1' };
        // The model: every id the delegation showed. An update naming an id never shown one past the limit must end the
        // attempt; while every id shown is within the limit nothing may. (Once lists within the limit showed more ids
        // than it, a list replaced the held ones: an id shown then dropped may count as new again.)
        const shown = new Set<number>();
        let ended = false;
        for (const [index, each] of sent.entries()) {
          const before = (await journal.getDelegationView(ref))!.artifacts.length;
          let must: boolean;
          let may: boolean;
          if ('update' in each) {
            must = !shown.has(each.update) && shown.size + 1 > LIMIT;
            may = must || (!shown.has(each.update) ? false : shown.size > LIMIT);
            const artifactUpdate = { taskId: 'T1', contextId: 'C1', artifact: { artifactId: `a${each.update}`, parts: [{ text: 'x' }] }, append: each.append, lastChunk: each.lastChunk };
            await applyStreamResponse(journal, record, { artifactUpdate } as never).catch(() => undefined);
            shown.add(each.update);
          } else {
            must = may = new Set(each.list).size > LIMIT;
            const artifacts = each.list.map((id) => ({ artifactId: `a${id}`, parts: [{ text: 'y' }] }));
            await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING', timestamp: new Date(Date.now() + index * 1000).toISOString() }, artifacts } as Task, { snapshot: true });
            if (!must) for (const id of each.list) shown.add(id);
          }
          const row = (await journal.getDelegation(ref))!;
          const view = (await journal.getDelegationView(ref))!;
          expect(view.artifacts.length).toBeLessThanOrEqual(LIMIT);
          if (row.state === 'AMBIGUOUS') {
            expect(may).toBe(true);
            expect(row.error).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'artifactsPerDelegation', delivery: 'received', retryable: false });
            // Nothing of what went over is stored.
            expect(view.artifacts.length).toBe(before);
            ended = true;
            break;
          }
          expect(must).toBe(false);
          expect(row.state).toBe('WORKING');
        }
        if (!ended) expect(shown.size > LIMIT || (await journal.getDelegation(ref))!.state === 'WORKING').toBe(true);
      }),
      {
        numRuns: 150,
        examples: [
          // LIMIT new ids by updates, then one more.
          [[...Array.from({ length: LIMIT }, (_, id) => ({ update: id, append: false, lastChunk: true })), { update: LIMIT, append: true, lastChunk: false }]],
          // A Task listing one more than the limit.
          [[{ list: Array.from({ length: LIMIT + 1 }, (_, id) => id) }]],
          // A Task listing the limit (duplicates do not count twice), then chunks of ids it listed: within.
          [[{ list: [...Array.from({ length: LIMIT }, (_, id) => id), 0, 1] }, { update: 0, append: true, lastChunk: false }, { update: 3, append: false, lastChunk: true }]],
          // Updates up to the limit, then a Task listing as many others (replaces: the limit held), then one more new id.
          [[...Array.from({ length: LIMIT }, (_, id) => ({ update: id, append: false, lastChunk: false })), { list: Array.from({ length: LIMIT }, (_, id) => id + LIMIT) }, { update: 14, append: false, lastChunk: false }]],
        ],
      },
    );
  }, 240_000);
});
