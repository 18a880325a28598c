/**
 * Property (field case A32 through the push webhook): over any sequence of authorized pushes about our task (an
 * artifact over partsPerMessage (a1 or a2), a body nested over jsonDepth, a whole artifact within limits, a COMPLETED
 * Task with any subset of a1, a2, a3, a COMPLETED or WORKING status update), every push refused over a limit while
 * the row is unfinished leaves the row's `refusedResult` (every refused artifact's id in it), and the row ends
 * COMPLETED only with some artifact and every refused artifact among its stored ones. The cases:
 * test/api/push-refused-result.test.ts. Real redis-server, the real push route (inject), no workers.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isFinished } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { overPartsArtifactPush, pushedTask, usePushRoute } from '../harness/pushes.ts';

const redisServer = useRedisServer();

type Push =
  | { kind: 'over-parts'; artifactId: 'a1' | 'a2' }
  | { kind: 'too-deep' }
  | { kind: 'whole-artifact'; artifactId: 'a1' | 'a2' }
  | { kind: 'completed-task'; artifactIds: string[] }
  | { kind: 'status'; state: 'WORKING' | 'COMPLETED' };

const pushArbitrary: fc.Arbitrary<Push> = fc.oneof(
  fc.record({ kind: fc.constant('over-parts' as const), artifactId: fc.constantFrom('a1' as const, 'a2' as const) }),
  fc.constant({ kind: 'too-deep' as const }),
  fc.record({ kind: fc.constant('whole-artifact' as const), artifactId: fc.constantFrom('a1' as const, 'a2' as const) }),
  fc.record({ kind: fc.constant('completed-task' as const), artifactIds: fc.subarray(['a1', 'a2', 'a3']) }),
  fc.record({ kind: fc.constant('status' as const), state: fc.constantFrom('WORKING' as const, 'COMPLETED' as const) }),
);

function bodyOf(push: Push): unknown {
  switch (push.kind) {
    case 'over-parts':
      return overPartsArtifactPush('T1', push.artifactId);
    case 'too-deep': {
      let deep: unknown = 'x';
      for (let level = 0; level < 80; level++) deep = { deep };
      return { ...pushedTask('T1', 'WORKING', []), metadata: deep };
    }
    case 'whole-artifact':
      return { artifactUpdate: { taskId: 'T1', contextId: 'C1', artifact: { artifactId: push.artifactId, parts: [{ text: 'within limits' }] }, lastChunk: true } };
    case 'completed-task':
      return pushedTask('T1', 'COMPLETED', push.artifactIds);
    case 'status':
      return { statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: `TASK_STATE_${push.state}` } } };
  }
}

describe('pushes refused over a limit, over any sequence of pushes', () => {
  const route = usePushRoute(redisServer, 'rrpushp');

  it('every refusal is journaled with its artifact id; COMPLETED only with every refused artifact stored', async () => {
    const examples: [Push[]][] = [
      [[{ kind: 'over-parts', artifactId: 'a1' }, { kind: 'completed-task', artifactIds: ['a2'] }]],
      [[{ kind: 'too-deep' }, { kind: 'completed-task', artifactIds: ['a3'] }]],
      [[{ kind: 'over-parts', artifactId: 'a1' }, { kind: 'over-parts', artifactId: 'a2' }, { kind: 'completed-task', artifactIds: ['a1'] }, { kind: 'completed-task', artifactIds: ['a1', 'a2'] }]],
    ];
    await fc.assert(
      fc.asyncProperty(fc.array(pushArbitrary, { minLength: 1, maxLength: 6 }), async (pushes) => {
        const { ref, push: post } = await route.working();
        const journal = route.producer().journal;
        const refusedIds = new Set<string>();
        let refused = false;
        for (const push of pushes) {
          const before = (await journal.getDelegation(ref))!;
          const response = await post(bodyOf(push));
          if ((push.kind === 'over-parts' || push.kind === 'too-deep') && !isFinished(before.state)) {
            refused = true;
            if (push.kind === 'over-parts') refusedIds.add(push.artifactId);
            expect(response.statusCode).toBe(push.kind === 'over-parts' ? 413 : 400);
            const fact = (await journal.getDelegation(ref))!.refusedResult;
            expect(fact).toMatchObject({ code: 'LIMIT_EXCEEDED', delivery: 'received' });
            expect(fact?.artifactIds ?? []).toEqual(expect.arrayContaining([...refusedIds]));
          }
        }
        const view = (await journal.getDelegationView(ref))!;
        if (view.state === 'COMPLETED' && refused) {
          const stored = view.artifacts.map((artifact) => artifact.artifactId);
          expect(stored.length).toBeGreaterThan(0);
          expect(stored).toEqual(expect.arrayContaining([...refusedIds]));
        }
      }),
      { examples, numRuns: 40 },
    );
  }, 300_000);
});
