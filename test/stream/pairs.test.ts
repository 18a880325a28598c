/**
 * The kind "two events that arrived together, applied in one round trip": a stream's artifact update and
 * the status update right behind it go to the journal as one script (`applyArtifactThenStatus`, composed from
 * applyArtifact-2.lua and applyStatus-5.lua).
 * - Property (real Redis, the real scripts): whatever the row (state, task id, a sealed or open artifact), the
 *   artifact update (new or known id, append, last chunk, over the byte limit), the status update (state, our task
 *   or another, a stale fence) and the lease, the pair leaves the row, its artifacts and the lease exactly as
 *   `applyArtifact` then `applyStatus` one after the other do, with the same outcomes or the same first error.
 * - End to end (scripted agent, real fleet): an artifact update and COMPLETED written in one chunk are applied by
 *   one script call, with no applyArtifact of their own; written apart, one by one; an artifact, a second chunk of
 *   it and COMPLETED in one chunk: the chunks one by one and COMPLETED from one full read (appended chunks are a
 *   partial view); an artifact with INPUT_REQUIRED behind it parks with the
 *   artifact kept; a status for another task behind an artifact is not paired (a protocol error, one GetTask).
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { Journal, type JournalState, type StatusChange } from '@durable-a2a/shared';
import { createProducer, type Producer, type WorkflowView } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { testsOnCluster, useRedisClient, useRedisServer, startMonitor } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { pairScriptOf } from '../harness/stream-pairs.ts';
import { artifactEntryBytes } from '../../packages/a2a/src/limits.ts';
import { AU, SU, ev, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle, type SseWait } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
const redisClient = useRedisClient(redisServer);

const BEFORE: JournalState[] = ['INTENT', 'WORKING', 'INPUT_REQUIRED', 'COMPLETED', 'FAILED'];
const AFTER: JournalState[] = ['WORKING', 'INPUT_REQUIRED', 'AUTH_REQUIRED', 'COMPLETED', 'FAILED', 'CANCELED'];
const CARD = 'http://agent.example/.well-known/agent-card.json';
/** The journal's limit on a delegation's artifact bytes in the property: an update of 300 characters passes it (the entry of `a1` aside). */
const ARTIFACT_LIMIT = artifactEntryBytes('a1') + 200;

const scenario = fc.record({
  before: fc.constantFrom(...BEFORE),
  /** An artifact `a1` already there: none, open, or sealed (lastChunk seen). */
  existing: fc.constantFrom<'none' | 'open' | 'sealed'>('none', 'open', 'sealed'),
  artifactId: fc.constantFrom('a1', 'a2'),
  append: fc.boolean(),
  lastChunk: fc.boolean(),
  oversize: fc.constantFrom(false, false, false, true),
  state: fc.constantFrom(...AFTER),
  statusTask: fc.constantFrom('t1', 't1', 't1', 't2'),
  staleFence: fc.constantFrom(false, false, false, true),
  withTimestamp: fc.boolean(),
  lease: fc.constantFrom<'none' | 'ours-finished' | 'other'>('none', 'ours-finished', 'other'),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;
let counter = 0;

/** A call's outcome, comparable across the two workflows. */
type Outcome = { error: string } | { artifact: string; status: string };

describe('applyArtifactThenStatus (property, real Redis)', () => {
  it('leaves the row, its artifacts and the lease as applyArtifact then applyStatus do, with the same outcomes', async () => {
    let paired = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        if ((await check(s)) === 'both ran') paired++;
      }),
      { numRuns: 300 },
    );
    // The pair's both halves ran often enough to prove something about them.
    expect(paired).toBeGreaterThan(30);
  });
});

/** One scenario told twice: the pair on one workflow, the two calls one after the other on the other. */
async function check(s: Scenario): Promise<'both ran' | 'refused'> {
  const prefix = `stream-pairs-${++counter}`;
  const redis = redisClient();
  const journal = new Journal(redis, { prefix, retentionMs: 60_000, now: () => 5_000, artifactBytesPerDelegation: ARTIFACT_LIMIT });
  const paired = { workflowId: `paired-${counter}`, delegationId: 'main.1' };
  const apart = { workflowId: `apart-${counter}`, delegationId: 'main.1' };
  // A task id belongs to one delegation: each workflow names its own (the same story told twice).
  const taskOf = (ref: typeof paired, id: string) => (ref === apart ? `${id}-apart` : id);
  for (const ref of [paired, apart]) {
    await journal.createWorkflow(ref.workflowId, { state: 'RUNNING' }, intentRow(ref.workflowId));
    const fence = await journal.claim(ref, 'worker');
    if (s.before !== 'INTENT') {
      const unfinished = s.before === 'WORKING' || s.before === 'INPUT_REQUIRED';
      // The artifact already there arrives before a finished state (after it, nothing applies).
      if (s.existing !== 'none' && !unfinished) await journal.applyStatus(ref, { fence, mode: 'snapshot', state: 'WORKING', taskId: taskOf(ref, 't1'), agentCardUrl: CARD });
      if (s.existing !== 'none') await journal.applyArtifact(ref, fence, { artifact: { artifactId: 'a1', parts: [{ text: 'first' }] }, lastChunk: s.existing === 'sealed' });
      await journal.applyStatus(ref, { fence, mode: 'event', state: s.before, taskId: taskOf(ref, 't1'), agentCardUrl: CARD });
    }
    if (s.lease !== 'none') expect(await journal.lease(ref, 'acquire', s.lease === 'other' ? 'them' : 'us', 60_000)).toBe(true);
  }
  const outcome = async (ref: typeof paired): Promise<Outcome> => {
    const row = (await journal.getDelegation(ref))!;
    const fence = s.staleFence ? row.fence - 1 : row.fence;
    const update = {
      artifact: { artifactId: s.artifactId, parts: [{ text: s.oversize ? 'x'.repeat(300) : 'more' }], name: 'result' },
      append: s.append,
      lastChunk: s.lastChunk,
    };
    const change: StatusChange = {
      fence,
      mode: 'event',
      state: s.state,
      taskId: taskOf(ref, s.statusTask),
      ...(s.withTimestamp ? { statusTimestamp: '2026-01-01T00:00:00Z' } : {}),
      ...(s.lease === 'none' ? {} : { endsLease: { token: 'us', when: 'finished' as const } }),
    };
    const codeOf = (error: unknown) => ({ error: (error as { code?: string }).code ?? String(error) });
    if (ref === paired) {
      return journal.applyArtifactThenStatus(ref, fence, update, change).then(
        ({ artifact, status }) => ({ artifact, status: status.applied ? 'applied' : `not ${status.reason}` }),
        codeOf,
      );
    }
    try {
      const artifact = await journal.applyArtifact(ref, fence, update);
      const status = await journal.applyStatus(ref, change);
      return { artifact, status: status.applied ? 'applied' : `not ${status.reason}` };
    } catch (error) {
      return codeOf(error);
    }
  };
  const a = await outcome(paired);
  const b = await outcome(apart);
  const story = JSON.stringify({ s, a, b });
  expect(a, story).toEqual(b);
  // The same keys, field by field, with each workflow's own ids written the same way.
  const normal = (ref: typeof paired, hash: Record<string, string>) => {
    const out: Record<string, string> = {};
    for (const [field, value] of Object.entries(hash)) out[field] = value.replaceAll(ref.workflowId, '<wf>').replaceAll('-apart', '');
    return out;
  };
  for (const key of ['delegation', 'artifacts'] as const) {
    const read = (ref: typeof paired) =>
      redis.hgetall(key === 'delegation' ? journal.keys.delegation(ref.workflowId, ref.delegationId) : `${journal.keys.delegation(ref.workflowId, ref.delegationId)}:artifacts`);
    expect(normal(paired, await read(paired)), `${key} ${story}`).toEqual(normal(apart, await read(apart)));
  }
  const holder = (ref: typeof paired) => redis.get(journal.keys.followLease(ref.workflowId, ref.delegationId));
  expect(await holder(paired), story).toBe(await holder(apart));
  return 'status' in a ? 'both ran' : 'refused';
}

describe.skipIf(testsOnCluster())('a stream whose artifact update and status update arrive together (end to end)', () => {
  let producer: Producer | undefined;
  let fleet: Fleet | undefined;
  let agent: ScriptedAgentHandle | undefined;
  let monitorClient: Redis | undefined;
  closeAfterEach(
    () => ({ fleet, agent, producer }),
    () => void (fleet = agent = producer = undefined),
  );
  afterAll(() => monitorClient?.disconnect());

  const completed = (view: WorkflowView) => view.state === 'COMPLETED';
  const asking = (view: WorkflowView) => view.openQuestions.length > 0;

  /**
   * Runs one delegation against an agent whose SubscribeToTask sends `sse` after the task snapshot; returns the
   * workflow's view once `done` holds, and the journal scripts called on it, by name.
   */
  async function run(tag: string, sse: (string | SseWait)[], done: (view: WorkflowView) => boolean) {
    const prefix = `stream-pairs-e2e-${tag}-${++counter}`;
    // MONITOR first, while Redis is quiet (ioredis takes replies that race its MONITOR for the command queue's).
    monitorClient = await startMonitor(redisServer().url);
    const calls: string[] = [];
    monitorClient.on('monitor', (_time: string, args: string[], source: string) => {
      if (source.includes('lua') || (args[0] ?? '').toLowerCase() !== 'evalsha' || !(args[3] ?? '').startsWith(`${prefix}:`)) return;
      calls.push(pairScriptOf(args) ?? 'another script');
    });
    agent = await startScriptedAgent({
      SendMessage: (params) => ({ result: { task: task('T1', 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] }) } }),
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING')), { waitMs: 50 }, ...sse], endAfter: 'hang' }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { artifacts: { a1: 'from GetTask' } }) }),
    });
    producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 60_000 });
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: tag });
    let row: WorkflowView | undefined;
    await eventually(async () => {
      row = await producer!.get(id);
      return done(row);
    }, `${tag}: ${id} reached the expected state`);
    monitorClient.disconnect();
    monitorClient = undefined;
    return { row: row!, attempt: row!.steps[0]!.attempts[0]!, calls, sendMessages: agent.count('SendMessage'), getTasks: agent.count('GetTask') };
  }

  it('an artifact update and COMPLETED in one chunk: one script call applies both, no applyArtifact of its own', async () => {
    const { row, attempt, calls, sendMessages, getTasks } = await run('together', [ev(AU('a1', false, true, 'the result')) + ev(SU('COMPLETED'))], completed);
    expect(row.state).toBe('COMPLETED');
    expect(attempt.resultText).toBe('the result');
    expect(calls.filter((name) => name === 'applyArtifactThenStatus')).toHaveLength(1);
    expect(calls.filter((name) => name === 'applyArtifact')).toHaveLength(0);
    expect(sendMessages).toBe(1);
    expect(getTasks).toBe(0);
  });

  it('an artifact update, then COMPLETED 150 ms later: applied one by one', async () => {
    const { row, attempt, calls } = await run('apart', [ev(AU('a1', false, true, 'the result')), { waitMs: 150 }, ev(SU('COMPLETED'))], completed);
    expect(row.state).toBe('COMPLETED');
    expect(attempt.resultText).toBe('the result');
    expect(calls.filter((name) => name === 'applyArtifactThenStatus')).toHaveLength(0);
    expect(calls.filter((name) => name === 'applyArtifact')).toHaveLength(1);
  });

  it('two chunks of an artifact and COMPLETED in one chunk: the chunks one by one, COMPLETED journaled from one full read (a stream of appended chunks is a partial view)', async () => {
    const { row, attempt, calls, getTasks } = await run('chunks', [ev(AU('a1', false, false, 'part one, ')) + ev(AU('a1', true, true, 'part two')) + ev(SU('COMPLETED'))], completed);
    expect(row.state).toBe('COMPLETED');
    // The full read's artifacts replace the streamed ones.
    expect(attempt.resultText).toBe('from GetTask');
    expect(getTasks).toBe(1);
    expect(calls.filter((name) => name === 'applyArtifact')).toHaveLength(2);
    expect(calls.filter((name) => name === 'applyArtifactThenStatus')).toHaveLength(0);
  });

  it('an artifact update with INPUT_REQUIRED behind it: parked on the question, the artifact kept', async () => {
    const { row, attempt, calls } = await run('question', [ev(AU('a1', false, true, 'a draft')) + ev(SU('INPUT_REQUIRED', { message: { messageId: 'q1', role: 'ROLE_AGENT', parts: [{ text: 'which seat?' }] } }))], asking);
    expect(attempt.state).toBe('INPUT_REQUIRED');
    expect(row.openQuestions.map((question) => question.text)).toEqual(['which seat?']);
    expect(attempt.resultText).toBe('a draft');
    expect(calls.filter((name) => name === 'applyArtifactThenStatus')).toHaveLength(1);
  });

  it('an artifact update with a status update for another task behind it: not paired, a protocol error read once', async () => {
    const { row, calls, getTasks } = await run('foreign', [ev(AU('a1', false, true, 'the result')) + ev(SU('COMPLETED', { taskId: 'T-other' }))], completed);
    expect(row.state).toBe('COMPLETED');
    expect(calls.filter((name) => name === 'applyArtifactThenStatus')).toHaveLength(0);
    expect(calls.filter((name) => name === 'applyArtifact')).toHaveLength(1);
    expect(getTasks).toBe(1);
  });
});
