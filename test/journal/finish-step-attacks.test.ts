/**
 * Attacks on the one-step finish (finishStep-5.lua, `Journal.finishStep`) that test/journal/finish-step.test.ts does
 * not make. The promise: either the script does all of the terminal status and the finishing settle, or nothing, and
 * the worker's fallback (the change alone, then the settle) leaves what the two calls leave: the same keys, values,
 * expiries (to the second) and messages on the change channel.
 * - Writers between the worker's read and its call that the first property does not try: the follow lease taken by
 *   another worker after it ran out (no fence change), a push of the same terminal status (unfenced), an effect
 *   recorded, the producer finishing the workflow itself, and a redis-server killed and restarted from its AOF.
 * - Records at the compacted record's 1 MiB limit: a snapshot's artifacts (ids full of characters the record escapes),
 *   a long status message and a history near its own bound, sized around maxBytes: the script's bound must hold
 *   (it writes the lease and the artifacts before it assembles the record: a bound too small would leave those
 *   writes behind an error).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Journal, type DelegationRecord } from '@durable-a2a/shared';
import { COMPACTED_RECORD_LAYOUT } from '../../packages/shared/src/journal/compacted-record.ts';
import { useRedisServer, testsOnCluster, useRedisClient } from '../harness/redis.ts';
import { dumpKeys, finishPatchOf, refusalOf, settleAsToday, setUpOneStep, terminalChangeOf, usePublished, type FinishScenario } from '../harness/finish-step.ts';

const redisServer = useRedisServer({ appendOnly: true });
const redis = useRedisClient(redisServer);
const NOW = 50_000;
const RETENTION_MS = 600_000;
const { drained, take } = usePublished(() => redisServer().url, redis);

type Ref = { workflowId: string; delegationId: string };
const interferences = ['none', 'lease-stolen', 'pushed-terminal', 'effect-recorded', 'workflow-finished-by-producer', 'redis-restart'] as const;
type Interference = (typeof interferences)[number];

/** What another writer (or the server) does between the worker's read and its call; `both`: done on both journals. */
async function interfere(journals: readonly [Journal, Journal], refs: readonly [Ref, Ref], interference: Interference): Promise<void> {
  if (interference === 'redis-restart') {
    // Acknowledged writes survive (appendfsync always is not needed: the AOF is flushed at every write's reply).
    await redis().call('CONFIG', 'SET', 'appendfsync', 'always');
    await redisServer().kill();
    await redisServer().restart();
    await redis().ping();
    return;
  }
  for (const [index, journal] of journals.entries()) {
    const ref = refs[index]!;
    switch (interference) {
      case 'none':
        break;
      case 'lease-stolen':
        // The follow's lease ran out and another worker took it: neither the fence nor a version moved.
        await redis().del(journal.keys.followLease(ref.workflowId, ref.delegationId));
        await journal.lease(ref, 'acquire', 'another-worker', 60_000);
        break;
      case 'pushed-terminal':
        await journal.applyStatus(ref, { mode: 'event', state: 'COMPLETED', taskId: 't-1', statusTimestamp: '2026-02-01T00:00:00.000Z' });
        break;
      case 'effect-recorded':
        await journal.recordEffect(ref, 'present', { seen: 'booking 42' });
        break;
      case 'workflow-finished-by-producer':
        await journal.updateWorkflow(ref.workflowId, { state: 'CANCELED', failure: ['canceled by a person'] });
        break;
    }
  }
}

/**
 * A compacted record with each delegation's artifacts (`art`, an object) in one order: the script builds that object
 * from a Lua table (`pairs`), whose order follows the hash's (HGETALL), which a Redis hash past its listpack size
 * does not keep from one read to the next (the dict's rehashing). Readers take the object by name.
 */
function sortedArtifacts(text: string): unknown {
  const record = JSON.parse(text) as { delegations?: { art?: Record<string, unknown> }[] };
  for (const delegation of record.delegations ?? []) {
    if (delegation.art) delegation.art = Object.fromEntries(Object.entries(delegation.art).sort(([a], [b]) => (a < b ? -1 : 1)));
  }
  return record;
}

/** Every key under `prefix` with its value (a compacted record parsed, `sortedArtifacts`), whether it expires, and its expiry to ten seconds. */
async function dumpWithTtl(prefix: string): Promise<Record<string, unknown>> {
  const out = await dumpKeys(redis(), prefix);
  for (const key of Object.keys(out)) {
    const ttl = await redis().pttl(key.replace('<p>', prefix));
    const entry = out[key] as { value: unknown };
    const value = key.endsWith(':done') && typeof entry.value === 'string' ? sortedArtifacts(entry.value) : entry.value;
    out[key] = { ...entry, value, ttlSeconds: ttl > 0 ? Math.round(ttl / 10_000) : ttl };
  }
  return out;
}

/** Messages on the change channel, a compacted record parsed (`sortedArtifacts`). */
const parsedMessages = (messages: { channel: string; message: string }[]) => messages.map(({ channel, message }) => ({ channel, message: message.startsWith('{') ? sortedArtifacts(message) : message }));

let counter = 0;

/**
 * Runs scenario `s` twice, under two prefixes: the one-step finish (and the settle after it when it wrote nothing) and
 * the two calls; `interfere` runs between the read and the call on both; `artifactOf` names the snapshot's artifacts.
 * Returns what each did, the dumps and the messages published.
 */
async function bothWays(s: FinishScenario, interference: Interference, options: { artifactOf?: Parameters<typeof terminalChangeOf>[3]; before?: (journal: Journal, ref: Ref) => Promise<void> } = {}) {
  counter++;
  const workflowId = `fsa-${counter}`;
  const journalOptions = { retentionMs: RETENTION_MS, now: () => NOW };
  const one = new Journal(redis(), { prefix: `fsaone${counter}`, ...journalOptions });
  const two = new Journal(redis(), { prefix: `fsatwo${counter}`, ...journalOptions });
  const patch = finishPatchOf(s.state);
  const setUp = async (journal: Journal) => {
    const set = await setUpOneStep(journal, workflowId, s);
    if (!options.before) return set;
    await options.before(journal, set.ref);
    return { ...set, held: (await journal.getDelegation(set.ref)) as DelegationRecord, workflow: (await journal.getWorkflow(workflowId))! };
  };
  const [a, b] = [await setUp(one), await setUp(two)];
  await interfere([one, two], [a.ref, b.ref], interference);
  await drained();
  take('');

  const first = terminalChangeOf(s, a.fence, a.held, options.artifactOf);
  const outcome = await refusalOf(async () => {
    const result = await one.finishStep(a.ref, first.change, { workflow: a.workflow, patch }, first.artifact);
    if (!result.finished) await settleAsToday(one, a.ref, result.status, patch);
    return result;
  });
  await drained();
  const publishedByOne = parsedMessages(take(`fsaone${counter}`));

  const second = terminalChangeOf(s, b.fence, b.held, options.artifactOf);
  const today = await refusalOf(async () => {
    const status = second.artifact ? (await two.applyArtifactThenStatus(b.ref, second.artifact.fence, second.artifact.update, second.change)).status : await two.applyStatus(b.ref, second.change);
    await settleAsToday(two, b.ref, status, patch);
    return status;
  });
  await drained();
  const publishedByTwo = parsedMessages(take(`fsatwo${counter}`));
  return {
    outcome,
    today,
    dumps: [await dumpWithTtl(`fsaone${counter}`), await dumpWithTtl(`fsatwo${counter}`)] as const,
    published: [publishedByOne, publishedByTwo] as const,
    read: async () => one.getDelegation(a.ref),
  };
}

const shapes = fc.record({
  state: fc.constantFrom<FinishScenario['state']>('COMPLETED', 'COMPLETED', 'FAILED', 'REJECTED', 'CANCELED'),
  shape: fc.constantFrom<FinishScenario['shape']>('event', 'pair', 'snapshot'),
  artifacts: fc.integer({ min: 0, max: 2 }),
  message: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  timestamp: fc.boolean(),
  contextId: fc.boolean(),
  lease: fc.boolean(),
});

describe.skipIf(testsOnCluster())('the one-step finish under attack (real Redis, real scripts)', () => {
  it('property: a lease taken by another worker, a pushed terminal status, an effect, the producer finishing the workflow, a Redis restart: all or nothing, and the same journal as the two calls', async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(shapes, fc.constantFrom(...interferences), async (s, interference) => {
        // A restart per run is slow: a few of them are enough.
        const chosen = interference === 'redis-restart' && seen.has('redis-restart-twice') ? 'none' : interference;
        if (chosen === 'redis-restart') seen.add(seen.has('redis-restart') ? 'redis-restart-twice' : 'redis-restart');
        const run = await bothWays(s, chosen);
        const context = JSON.stringify({ s, chosen, outcome: 'finished' in run.outcome ? run.outcome.finished : run.outcome });
        expect('refused' in run.outcome ? run.outcome.refused : undefined, context).toBe('refused' in run.today ? run.today.refused : undefined);
        expect(run.dumps[0], context).toEqual(run.dumps[1]);
        expect(run.published[0], context).toEqual(run.published[1]);
        // A lease taken by another worker and a restart change nothing the script compares: it finishes in one;
        // the others change a row it compares: nothing is written, the two calls run.
        const inOne = 'finished' in run.outcome && run.outcome.finished ? run.outcome : undefined;
        expect(inOne !== undefined, context).toBe(chosen === 'none' || chosen === 'lease-stolen' || chosen === 'redis-restart');
        if (inOne) expect(inOne.record, context).toEqual(await run.read());
        seen.add(chosen);
      }),
      // Every interference at least once, whatever the seed.
      { numRuns: 60, examples: interferences.map((interference) => [{ state: 'COMPLETED', shape: 'event', artifacts: 1, message: undefined, timestamp: true, contextId: true, lease: true }, interference] as [FinishScenario, Interference]) },
    );
    expect([...seen].filter((name) => (interferences as readonly string[]).includes(name)).sort()).toEqual([...interferences].sort());
  }, 120_000);

  it("property: records around the 1 MiB limit (a snapshot's artifacts with escaped ids, a long status message, a history near its bound): never an error, the same journal as the two calls", async () => {
    const maxBytes = COMPACTED_RECORD_LAYOUT.maxBytes;
    const outcomes = { finished: 0, large: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          // The artifacts' parts together: from 40 KiB under the limit to 40 KiB over it.
          total: fc.integer({ min: maxBytes - 40 * 1024, max: maxBytes + 40 * 1024 }),
          count: fc.integer({ min: 1, max: 4 }),
          // Artifact ids of characters cjson escapes six bytes each, quotes, slashes and multi-byte ones.
          id: fc.string({ unit: fc.constantFrom('\u0001', '"', '\\', '/', 'é', '😀', 'a', '\n'), minLength: 1, maxLength: 40 }),
          message: fc.option(fc.string({ unit: fc.constantFrom('\u0002', '"', 'x'), maxLength: 2_000 }), { nil: undefined }),
          // A question asked before the task finished (a history entry) of up to the history's bound.
          question: fc.option(fc.integer({ min: 1_000, max: 120 * 1024 }), { nil: undefined }),
          state: fc.constantFrom<FinishScenario['state']>('COMPLETED', 'FAILED'),
        }),
        async ({ total, count, id, message, question, state }) => {
          const s: FinishScenario = { state, shape: 'snapshot', artifacts: count, message, timestamp: true, contextId: false, lease: true };
          const each = Math.floor((total - (question ?? 0)) / count);
          const artifactOf = (index: number) => ({ artifactId: `${id}${index}`, name: `${id}`, parts: [{ text: 'z'.repeat(Math.max(0, each)) }] });
          const before = question
            ? async (journal: Journal, ref: Ref) => {
                await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 't-1', statusMessage: { messageId: 'q-1', role: 'ROLE_AGENT', parts: [{ text: 'q'.repeat(question) }] } });
                await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 't-1' });
              }
            : undefined;
          const run = await bothWays(s, 'none', { artifactOf, ...(before ? { before } : {}) });
          const context = JSON.stringify({ total, count, id, question, outcome: 'refused' in run.outcome ? run.outcome : run.outcome.finished });
          expect('refused' in run.outcome, context).toBe(false);
          expect(run.dumps[0], context).toEqual(run.dumps[1]);
          expect(run.published[0], context).toEqual(run.published[1]);
          if ('finished' in run.outcome && run.outcome.finished) outcomes.finished++;
          else outcomes.large++;
        },
      ),
      {
        numRuns: 40,
        // Both sides of the limit, whatever the seed: 40 KiB under it and 40 KiB over it.
        examples: [
          [{ total: maxBytes - 40 * 1024, count: 1, id: 'a', message: undefined, question: undefined, state: 'COMPLETED' }],
          [{ total: maxBytes + 40 * 1024, count: 1, id: 'a', message: undefined, question: undefined, state: 'COMPLETED' }],
        ],
      },
    );
    // Both sides of the limit were reached (the random runs fall on the large side about one time in four: a
    // count threshold over 40 runs would fail now and then by chance, so the examples above carry the coverage).
    expect(outcomes.finished).toBeGreaterThanOrEqual(1);
    expect(outcomes.large).toBeGreaterThanOrEqual(1);
  }, 300_000);
});
