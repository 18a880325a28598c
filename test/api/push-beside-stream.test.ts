/**
 * Pushes that arrive while a stream follows the same task (attack13). Pushes are separate POSTs: they arrive late,
 * out of order and repeated (spec §9: duplicates happen), so what a push writes between a stream's snapshot and its
 * finished status update is no part of the stream's view. A finished status must then not settle the row from the
 * journal's artifacts as the push left them: a push of a stale Task with "artifacts": [] (the result wiped) or a
 * repeated appended chunk (the result doubled). Real redis-server, real fleet, the real push webhook, a scripted raw
 * JSON-RPC agent.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifactText, finished, viewOf } from '../harness/field-cases.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { listenOnLoopback, startTestServer } from '../harness/api-server.ts';
import { useRedisServer } from '../harness/redis.ts';
import { SU, ev, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { ApiServer } from '@durable-a2a/producer/server';
import type { Fleet } from '@durable-a2a/workers';

const redisServer = useRedisServer();

/**
 * What a late push carries (the agent built a1 as "book" then "ed" appended): a stale Task (without artifacts, or with
 * another), a chunk of a1 again (the appended last one, the first one, a middle one), or a1 whole again.
 */
const LATE_PUSHES = ['stale-task-no-artifacts', 'stale-task-other-artifact', 'stale-task-new-message-no-artifacts', 'repeated-appended-chunk', 'late-first-chunk', 'repeated-middle-chunk', 'whole-artifact-again'] as const;
type LatePush = (typeof LATE_PUSHES)[number];

/** The push body for `kind` about task T1 in `contextId`. */
function pushBody(kind: LatePush, contextId: string): unknown {
  const chunk = (text: string, append: boolean, lastChunk?: boolean) => ({
    artifactUpdate: { taskId: 'T1', contextId, artifact: { artifactId: 'a1', parts: [{ text }] }, append, ...(lastChunk === undefined ? {} : { lastChunk }) },
  });
  switch (kind) {
    case 'stale-task-no-artifacts':
      return { task: task('T1', 'WORKING', { contextId, artifacts: [] }) };
    case 'stale-task-new-message-no-artifacts':
      return { task: task('T1', 'WORKING', { contextId, artifacts: [], message: { messageId: 'progress-1', role: 'ROLE_AGENT', parts: [{ text: 'starting' }] } }) };
    case 'stale-task-other-artifact':
      return { task: task('T1', 'WORKING', { contextId, artifacts: { draft: 'draft' } }) };
    case 'repeated-appended-chunk':
      return chunk('ed', true, true);
    case 'late-first-chunk':
      return chunk('book', false, false);
    case 'repeated-middle-chunk':
      return chunk('ed', true);
    case 'whole-artifact-again':
      return chunk('booked', false, true);
  }
}

describe('a push between a stream snapshot and its finished status (attack13)', () => {
  let app: ApiServer;
  let producer: Producer;
  let fleet: Fleet;
  let n = 0;
  beforeAll(async () => {
    const prefix = 'pushstream';
    app = startTestServer({ redisUrl: redisServer().url, prefix });
    const webhookUrl = `${await listenOnLoopback(app)}/v1/push`;
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, webhookUrl });
  });
  afterAll(async () => {
    await fleet?.close();
    await app?.close();
    await producer?.close();
  });

  /**
   * One pushed delegation to an agent whose stream sends a snapshot WORKING holding a1 "booked" (whole), waits until
   * the test's late push (`kind`) was answered, then COMPLETED; its GetTask holds a1 "booked". Returns the settled view.
   */
  const run = (kind: LatePush) => runWith((contextId) => [pushBody(kind, contextId)], 0, { a1: 'booked' });

  /**
   * `run` with any pushes (bodies for the task's context), then `stale` snapshots WORKING holding a1 "booked" only
   * before COMPLETED; GetTask holds `agentHolds`.
   */
  async function runWith(pushes: (contextId: string) => unknown[], stale: number, agentHolds: Record<string, string>, duringStale: (contextId: string) => unknown[] = () => []) {
    let release: () => void = () => undefined;
    const pushed = new Promise<void>((resolve) => (release = resolve));
    let contextId = '';
    const snapshot = () => taskEvent(task('T1', 'WORKING', { contextId, artifacts: { a1: 'booked' } }));
    const agent: ScriptedAgentHandle = await startScriptedAgent({
      SendMessage: (params) => {
        contextId = params.message.contextId;
        return { result: { task: task('T1', 'WORKING', { contextId, history: [params.message] }) } };
      },
      SubscribeToTask: () => ({
        sse: [snapshot(), { until: pushed }, ...Array.from({ length: stale }, snapshot), ev(SU('COMPLETED', { contextId }))],
        endAfter: 'close',
      }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId, artifacts: agentHolds }) }),
    });
    try {
      const workflowId = `late-${++n}`;
      const ref = { workflowId, delegationId: 'main.1' };
      await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'book' }, push: true }] });
      // The stream's snapshot is journaled: a1 "booked".
      await eventually(async () => artifactText(await viewOf(producer, workflowId), 'a1') === 'booked', 'snapshot journaled', 20_000);
      const token = (await producer.journal.pushToken(ref))!;
      const push = async (body: unknown) => {
        const response = await app.inject({
          method: 'POST',
          url: `/v1/push/${workflowId}/main.1`,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/a2a+json' },
          payload: JSON.stringify(body),
        });
        expect(response.statusCode).toBe(204);
      };
      for (const body of pushes(contextId)) await push(body);
      // mend15 (a): pushes landing just before the first stale snapshot's write, after the stream took the snapshot
      // (where the stream used to read the journal's ids): the fleet's own journal, its applyStatus wrapped.
      const late = duringStale(contextId);
      if (late.length > 0) {
        const journal = fleet.context.journal;
        const applyStatus = journal.applyStatus.bind(journal);
        let first = true;
        journal.applyStatus = async (target, change) => {
          if (first && target.workflowId === workflowId && change.state === 'WORKING' && change.artifacts?.length) {
            first = false;
            for (const body of late) await push(body);
          }
          return applyStatus(target, change);
        };
        hooked = () => void (journal.applyStatus = applyStatus);
      }
      release();
      const record = await finished(producer, workflowId, 30_000);
      return { record, view: await viewOf(producer, workflowId), agent };
    } finally {
      release();
      hooked();
      await agent.close();
    }
  }
  let hooked = () => undefined;

  it('the first chunk of a1 ("book", lastChunk false) pushed late, after the snapshot held a1 whole: the result is "booked", not "book"', async () => {
    const { record, view } = await run('late-first-chunk');
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(view, 'a1')).toBe('booked');
  }, 45_000);

  it('a chunk pushed again (append) after the snapshot held it: the result is "booked", not "bookeded"', async () => {
    const { record, view } = await run('repeated-appended-chunk');
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(view, 'a1')).toBe('booked');
  }, 45_000);

  it('a stale Task pushed with a new status message and "artifacts": [] after the snapshot held a1: the result a1 is kept, not wiped', async () => {
    const { record, view } = await run('stale-task-new-message-no-artifacts');
    expect({ state: record.state, a1: artifactText(view, 'a1') }).toEqual({ state: 'COMPLETED', a1: 'booked' });
  }, 45_000);

  it('property: any late push that changes the journal\'s artifacts between the snapshot and COMPLETED: the record holds what the agent holds, one send', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...LATE_PUSHES), async (kind) => {
        const { record, view, agent } = await run(kind);
        expect(record.state).toBe('COMPLETED');
        expect(view.artifacts.map((artifact) => ({ id: artifact.artifactId, text: artifactText(view, artifact.artifactId) }))).toEqual([{ id: 'a1', text: 'booked' }]);
        expect(agent.count('SendMessage')).toBe(1);
      }),
      // Every kind, whatever the seed: the examples run first.
      { numRuns: 8, examples: LATE_PUSHES.map((kind) => [kind] as [LatePush]) },
    );
  }, 300_000);

  /** Whole artifacts `ids` pushed (each "pushed <id>"), between the stream's snapshot and its stale ones. */
  const wholePushes = (ids: string[]) => (contextId: string) =>
    ids.map((id) => ({ artifactUpdate: { taskId: 'T1', contextId, artifact: { artifactId: id, parts: [{ text: `pushed ${id}` }] }, lastChunk: true } }));
  const textsOf = (view: Awaited<ReturnType<typeof viewOf>>) => Object.fromEntries(view.artifacts.map((artifact) => [artifact.artifactId, artifactText(view, artifact.artifactId)]));

  // review15: the stream kept the ids the journal held from its first Task on; a2 pushed whole beside it was no id it
  // knew, so the next (stale) snapshot holding a1 replaced a2 away, counted as taking nothing back, and COMPLETED
  // settled without a2. The ids held are read as each Task with artifacts comes.
  it('review15: a2 pushed whole after the snapshot holding a1, then a stale snapshot holding a1, then COMPLETED: the record holds a1 and a2', async () => {
    const { record, view } = await runWith(wholePushes(['a2']), 1, { a1: 'booked', a2: 'pushed a2' });
    expect({ state: record.state, artifacts: textsOf(view) }).toEqual({ state: 'COMPLETED', artifacts: { a1: 'booked', a2: 'pushed a2' } });
  }, 45_000);

  // mend15 (a): the stream read the journal's ids (HKEYS) at each Task, then applied it: a2 pushed between the two was
  // replaced away by the stale snapshot holding a1, unseen (no id taken back), and COMPLETED settled without a2. The
  // script that applies the Task names the ids it leaves out, read with its write.
  it('mend15: a2 pushed whole between the stream taking a stale snapshot holding a1 and its write, then COMPLETED: the record holds a1 and a2', async () => {
    const { record, view } = await runWith(() => [], 1, { a1: 'booked', a2: 'pushed a2' }, wholePushes(['a2']));
    expect({ state: record.state, artifacts: textsOf(view) }).toEqual({ state: 'COMPLETED', artifacts: { a1: 'booked', a2: 'pushed a2' } });
  }, 45_000);

  it('property (mend15): whole artifacts pushed between the snapshots and between a stale snapshot and its write, 1 or 2 stale snapshots: the record holds what the agent holds, one send', async () => {
    await fc.assert(
      fc.asyncProperty(fc.subarray(['a2', 'a3']), fc.uniqueArray(fc.constantFrom('a4', 'a5'), { minLength: 1, maxLength: 2 }), fc.integer({ min: 1, max: 2 }), async (between, during, stale) => {
        const ids = [...between, ...during];
        const agentHolds = { a1: 'booked', ...Object.fromEntries(ids.map((id) => [id, `pushed ${id}`])) };
        const { record, view, agent } = await runWith(wholePushes(between), stale, agentHolds, wholePushes(during));
        const what = JSON.stringify({ between, during, stale });
        expect(record.state, what).toBe('COMPLETED');
        expect(textsOf(view), what).toEqual(agentHolds);
        expect(agent.count('SendMessage'), what).toBe(1);
      }),
      { numRuns: 5, examples: [[[], ['a4'], 2], [['a2'], ['a5', 'a4'], 1]] },
    );
  }, 300_000);

  it('property (review15): any whole artifacts pushed between the snapshots, 1 or 2 stale snapshots after: the record holds what the agent holds, one send', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.constantFrom('a2', 'a3', 'a4'), { minLength: 1, maxLength: 3 }), fc.integer({ min: 1, max: 2 }), async (ids, stale) => {
        const agentHolds = { a1: 'booked', ...Object.fromEntries(ids.map((id) => [id, `pushed ${id}`])) };
        const { record, view, agent } = await runWith(wholePushes(ids), stale, agentHolds);
        const what = JSON.stringify({ ids, stale });
        expect(record.state, what).toBe('COMPLETED');
        expect(textsOf(view), what).toEqual(agentHolds);
        expect(agent.count('SendMessage'), what).toBe(1);
      }),
      { numRuns: 6, examples: [[['a2'], 2], [['a3', 'a2'], 1]] },
    );
  }, 300_000);
});
