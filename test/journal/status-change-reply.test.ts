/**
 * Property (applyStatus's change reply): whatever happened to the row before (status changes, artifact updates,
 * claims, follow takes, lease handovers, progress and not-found notes, push config steps, verified effects, suspects noted and cleared) and
 * whatever record the caller holds (the latest one the journal handed out, an older one, a copy), the record a status
 * change returns is the record a read of the row right after it gives: the same keys in the same order and the same
 * values. When the caller holds the row at its version the script replies with the change only (no HGETALL), and
 * never otherwise. Real Redis, the real scripts.
 */
import fc from 'fast-check';
import type { Artifact } from '@durable-a2a/a2a';
import { describe, expect, it } from 'vitest';
import { isFinished, type Journal, type DelegationRecord, type DelegationRef, type JournalState, type StatusChange } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { hgetallCalls, journalWithIntent } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

const CARD = 'http://agent.example/.well-known/agent-card.json';
const STATES: JournalState[] = ['SUBMITTED', 'WORKING', 'WORKING', 'INPUT_REQUIRED', 'AUTH_REQUIRED', 'COMPLETED', 'FAILED', 'AMBIGUOUS'];
const message = (text: string, id?: string) => ({ role: 'ROLE_AGENT' as const, parts: [{ text }], messageId: id ?? `q-${text}` });

const statusStep = fc.record({
  kind: fc.constant<'status'>('status'),
  mode: fc.constantFrom<StatusChange['mode']>('event', 'snapshot', 'outcome'),
  state: fc.constantFrom(...STATES),
  timestamp: fc.constantFrom(undefined, '2026-01-01T00:00:01Z', '2026-01-01T00:00:02Z'),
  taskId: fc.constantFrom(undefined, 't1'),
  contextId: fc.constantFrom(undefined, 'ctx-1'),
  statusMessage: fc.constantFrom(undefined, 'first', 'second'),
  result: fc.constantFrom(undefined, { answer: 42 }),
  error: fc.constantFrom(undefined, { code: 'TASK_FAILED' as const, message: 'no', retryable: false }),
  artifacts: fc.constantFrom<Artifact[] | undefined>(undefined, [], [{ artifactId: 'a1', parts: [{ text: 'x' }] }]),
  lease: fc.constantFrom<'none' | 'always' | 'finished' | 'handover'>('none', 'none', 'always', 'finished', 'handover'),
  withArtifactUpdate: fc.boolean(),
  held: fc.constantFrom<'latest' | 'older' | 'copy' | 'none'>('latest', 'latest', 'latest', 'older', 'copy', 'none'),
});

const otherStep = fc.oneof(
  fc.record({ kind: fc.constant<'artifact'>('artifact'), append: fc.boolean() }),
  fc.record({ kind: fc.constant<'claim'>('claim') }),
  fc.record({ kind: fc.constant<'takeFollow'>('takeFollow') }),
  fc.record({ kind: fc.constant<'noProgress'>('noProgress'), mark: fc.constantFrom('m1', 'm2') }),
  fc.record({ kind: fc.constant<'notFound'>('notFound') }),
  fc.record({ kind: fc.constant<'pushConfig'>('pushConfig'), to: fc.constantFrom('creating' as const, 'registered' as const), id: fc.constantFrom(undefined, 'cfg-1') }),
  fc.record({ kind: fc.constant<'effect'>('effect') }),
  // A refused push's suspect (noteSuspect-1.lua, no version bump; an id too long is counted lost) and the end of a
  // round of reads (clearSuspects-1.lua, which deletes `suspects` when none is left).
  fc.record({ kind: fc.constant<'suspect'>('suspect'), id: fc.constantFrom('T2', 'T3', 'x'.repeat(300)) }),
  fc.record({ kind: fc.constant<'clearSuspects'>('clearSuspects'), read: fc.constantFrom<string[]>(['T2'], ['T2', 'T3'], []) }),
);

/** An arbitrary's value type. */
type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;

const steps = fc.array(fc.oneof({ arbitrary: statusStep, weight: 3 }, { arbitrary: otherStep, weight: 2 }), { minLength: 2, maxLength: 10 });

let counter = 0;
const paths = { change: 0, whole: 0 };

describe('applyStatus: the change reply merged into the held row is the row as read (property, real Redis)', () => {
  it('returns the record a read gives, whatever the caller holds and whatever happened before', async () => {
    // Forced: a suspect noted between the read the caller holds and the change that finishes the row (the settle
    // decides from that record: it must see the suspect), and suspects cleared after a copy holding them was read.
    const status = (state: JournalState, held: ValueOf<typeof statusStep>['held'] = 'latest'): ValueOf<typeof statusStep> =>
      ({ kind: 'status', mode: 'event', state, timestamp: undefined, taskId: 't1', contextId: undefined, statusMessage: undefined, result: undefined, error: undefined, artifacts: undefined, lease: 'none', withArtifactUpdate: false, held });
    const examples: [ValueOf<typeof steps>][] = [
      [[status('WORKING'), { kind: 'suspect', id: 'T2' }, status('COMPLETED')]],
      [[status('WORKING'), { kind: 'suspect', id: 'x'.repeat(300) }, status('FAILED')]],
      [[status('SUBMITTED'), { kind: 'suspect', id: 'T2' }, status('WORKING'), { kind: 'clearSuspects', read: ['T2'] }, status('COMPLETED')]],
    ];
    await fc.assert(fc.asyncProperty(steps, run), { numRuns: 150, examples });
    // Both replies were exercised (a property that never reaches one proves nothing about it).
    expect(paths.change).toBeGreaterThan(50);
    expect(paths.whole).toBeGreaterThan(50);
  });
});

async function run(sequence: ValueOf<typeof steps>): Promise<void> {
  const { journal, ref, record } = await journalWithIntent(redis(), { prefix: `change-reply-${++counter}`, workflowId: `w-${counter}`, now: () => 5_000 + counter });
  let latest = record;
  let older = latest;
  for (const step of sequence) {
    switch (step.kind) {
      case 'status': {
        const held = step.held === 'latest' ? latest : step.held === 'older' ? older : step.held === 'copy' ? { ...latest } : undefined;
        const changed = await applyOne(journal, ref, step, held, latest);
        if (changed) {
          older = latest;
          latest = changed;
        }
        break;
      }
      case 'artifact':
        await journal.applyArtifact(ref, undefined, { artifact: { artifactId: 'a2', parts: [{ text: 'y' }] }, append: step.append }).catch(() => undefined);
        break;
      case 'claim':
        await journal.claim(ref, 'worker-x');
        break;
      case 'takeFollow':
        await journal.lease(ref, 'release', 'follow-x');
        await journal.takeFollow(ref, 'follow-x', 30_000);
        break;
      case 'noProgress':
        await journal.noteNoProgress(ref, step.mark, 'seen');
        break;
      case 'notFound':
        await journal.noteNotFound(ref);
        break;
      case 'pushConfig':
        await journal.notePushConfig(ref, 'any', step.to, step.id);
        break;
      case 'effect':
        await journal.recordEffect(ref, 'present', { seen: true });
        break;
      case 'suspect':
        await journal.noteSuspect(ref, step.id);
        break;
      case 'clearSuspects':
        await journal.clearSuspects(ref, { read: step.read });
        break;
    }
  }
}

/** One status change (with the artifact update before it, in one script, when asked); checks its record against a read. */
async function applyOne(journal: Journal, ref: DelegationRef, step: ValueOf<typeof statusStep>, held: DelegationRecord | undefined, latest: DelegationRecord): Promise<DelegationRecord | undefined> {
  const row = await journal.getDelegation(ref);
  if (!row) return undefined;
  if (step.lease !== 'none') await journal.lease(ref, 'acquire', 'send-x', 30_000);
  const endsLease: StatusChange['endsLease'] =
    step.lease === 'none' ? undefined : step.lease === 'handover' ? { token: 'send-x', when: 'handover', to: 'follow-x', durationMs: 30_000, checkAt: 9_000 } : { token: 'send-x', when: step.lease };
  const taskId = step.taskId;
  const change: StatusChange = {
    mode: step.mode,
    state: step.state,
    ...(step.timestamp ? { statusTimestamp: step.timestamp } : {}),
    ...(taskId ? { taskId } : {}),
    ...(step.contextId ? { contextId: step.contextId } : {}),
    ...(step.statusMessage ? { statusMessage: message(step.statusMessage) } : {}),
    ...(step.result ? { result: step.result } : {}),
    ...(step.error ? { error: step.error } : {}),
    ...(step.artifacts ? { artifacts: step.artifacts } : {}),
    ...(endsLease ? { endsLease } : {}),
    ...(held ? { held } : {}),
  };
  const isCluster = redis().isCluster;
  const before = isCluster ? 0 : await hgetallCalls(redis());
  // The composed script takes no binding: a row with a task id, the change naming it.
  const pair = step.withArtifactUpdate && row.taskId !== undefined;
  const result = pair
    ? (await journal.applyArtifactThenStatus(ref, undefined, { artifact: { artifactId: 'a3', parts: [{ text: 'z' }] } }, { ...change, taskId: row.taskId })).status
    : await journal.applyStatus(ref, taskId && !row.taskId ? { ...change, agentCardUrl: CARD } : change);
  const calls = isCluster ? 0 : (await hgetallCalls(redis())) - before;
  if (!result.applied) return undefined;
  const read = await journal.getDelegation(ref);
  expect(result.record, JSON.stringify(step)).toBeDefined();
  // The same record as a read: keys in the same order, the same values (a key holding undefined included).
  expect(Object.entries(result.record!), JSON.stringify(step)).toStrictEqual(Object.entries(read!));
  if (!isCluster) {
    // A finishing change also reads the workflow row whole (HGETALL): that one is not the delegation's.
    const whole = calls - (isFinished(result.record!.state) ? 1 : 0) === 1;
    // The change only, exactly when the caller held the row as the journal handed it out, at the version changed, and
    // its copy holds no suspects (clearSuspects-1.lua deletes them without a bump: such a copy gets the row whole).
    expect(whole, JSON.stringify(step)).toBe(!(held !== undefined && held === latest && held.version === row.version && held.suspects === undefined));
    paths[whole ? 'whole' : 'change']++;
  }
  return result.record;
}
