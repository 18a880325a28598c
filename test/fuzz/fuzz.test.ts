/**
 * The variant-agent fuzzer inside `pnpm test`: 100 generated
 * deviating agents against one fleet on one private redis-server, over the
 * deviation kinds the product passes (IN_SUITE_KINDS: all of them; docs/conformance-kit.md "Known failures").
 * `pnpm fuzz` runs every kind (FUZZ_RUNS, default 500).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useRedisServer } from '../harness/redis.ts';
import { ALWAYS, ARTIFACT_BUDGET_BYTES, DEVIATION_KINDS, parseKinds, spellState, stamp, readStamp, type Behaviour, type DeviationKind } from './grammar.ts';
import { behaviourArbitrary } from './generators.ts';
import { checkInvariants, DEFAULT_LIMITS, type RunObservation } from './invariants.ts';
import { SETTLE_AFTER_FINAL_MS } from './invariants-answers.ts';
import { conformanceParameters, conformanceProperty } from './property.ts';
import { startFuzzSession, type FuzzSession } from './session.ts';
import { reorder } from './stream.ts';

/** Kinds the product passes at the commit named in docs/conformance-kit.md: every kind of the grammar. */
export const IN_SUITE_KINDS: readonly DeviationKind[] = [...DEVIATION_KINDS];

/** Fixed so the suite is reproducible; FUZZ_SEED overrides (fast-check prints the seed of a failure). */
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20_261_130;

describe('the deviation grammar', () => {
  it('spells states the ways agents do', () => {
    expect(spellState('INPUT_REQUIRED', 'proto')).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(spellState('INPUT_REQUIRED', 'v03')).toBe('input-required');
    expect(spellState('INPUT_REQUIRED', 'pascal')).toBe('InputRequired');
    expect(spellState('COMPLETED', 'protoLower')).toBe('task_state_completed');
  });

  it('writes skewed, zone-less and offset timestamps the agent reads back to the same instant', () => {
    const at = Date.UTC(2026, 10, 30, 12, 0, 0);
    for (const format of ['utc', 'zoneless', 'offset'] as const) {
      expect(readStamp(stamp(at, { kind: 'clock', skewMs: -60_000, format, terminalBeforeWorking: false }))).toBe(at - 60_000);
    }
    expect(stamp(at, { kind: 'clock', skewMs: 0, format: 'zoneless', terminalBeforeWorking: false })).toBe('2026-11-30T12:00:00.000');
  });

  it('duplicates, drops and swaps events with wrapping indexes', () => {
    expect(reorder([1, 2, 3], [{ op: 'duplicate', index: 4 }])).toEqual([1, 2, 2, 3]);
    expect(reorder([1, 2, 3], [{ op: 'drop', index: 0 }, { op: 'swap', index: 0, with: 1 }])).toEqual([3, 2]);
  });

  it('selects kinds by name and refuses unknown ones', () => {
    expect(parseKinds(undefined)).toEqual([...DEVIATION_KINDS]);
    expect(parseKinds(' clock,hang ')).toEqual(['clock', 'hang']);
    expect(() => parseKinds('clock,typo')).toThrow(/unknown deviation kind "typo"/);
  });

  it('generates only the selected kinds, each at most once per behaviour', () => {
    for (const behaviour of fc.sample(behaviourArbitrary(['clock', 'hang']), { numRuns: 50, seed: 1 })) {
      const kinds = behaviour.deviations.map((deviation) => deviation.kind);
      expect(kinds.every((kind) => kind === 'clock' || kind === 'hang')).toBe(true);
      expect(new Set(kinds).size).toBe(kinds.length);
    }
  });
});

describe('the invariants', () => {
  const behaviour: Behaviour = { story: { final: 'COMPLETED', workMs: 0, chunks: 1 }, deviations: [] };
  const base: RunObservation = {
    runId: 'r1',
    behaviour,
    agentTask: { id: 'task-r1', contextId: 'c1', message: { messageId: 'm1' }, createdAtMs: 0, workingAtMs: 0, finalAtMs: 0 },
    calls: [{ site: 'SendMessage', atMs: 0, messageId: 'm1', duplicate: false }],
    sendNamedTask: true,
    delegation: { taskId: 'task-r1', contextId: 'c1', state: 'COMPLETED', artifacts: [{ artifactId: 'a1', parts: [{ text: 'result-r1' }] }] } as unknown as RunObservation['delegation'],
    workflow: { state: 'COMPLETED' },
    settled: true,
    deadlineMs: 1_000,
    lastProgressAtMs: 0,
    maxRssBytes: 100,
    baselineRssBytes: 100,
    oversizedKeys: [],
  };
  const names = (observation: Partial<RunObservation>) => checkInvariants({ ...base, ...observation }).map((violation) => violation.invariant);

  it('pass a conforming run and flag each kind of breach', () => {
    expect(names({})).toEqual([]);
    const adopted = { taskId: 'foreign-task-r1', contextId: 'foreign-ctx-r1', state: 'FAILED', artifacts: [], version: 1 } as unknown as RunObservation['delegation'];
    expect(names({ delegation: adopted })).toEqual(['foreign-adopted', 'foreign-adopted', 'wrong-outcome', 'outcome-not-adopted']);
    expect(names({ calls: [...base.calls, { site: 'SendMessage', atMs: 1, messageId: 'm1', duplicate: true }] })).toEqual(['duplicate-send']);
    expect(names({ settled: false, workflow: { state: 'RUNNING' } })).toEqual(['not-settled']);
    const gaveUp = { taskId: 'task-r1', state: 'AMBIGUOUS', artifacts: [], error: { code: 'AMBIGUOUS', message: 'unreadable' } } as unknown as RunObservation['delegation'];
    expect(names({ delegation: gaveUp, workflow: { state: 'NEEDS_ATTENTION', attention: 'ambiguous' } })).toEqual(['outcome-not-adopted']);
    expect(names({ delegation: gaveUp, behaviour: { ...behaviour, deviations: [{ kind: 'oversized', where: 'artifact', shape: 'parts', amount: 1_001 }] } })).toEqual([]);
    // Nobody can find the task: no send answer named it and every ListTasks answer is spoilt. With ListTasks usable, or a
    // send answer that named it, giving up is a breach.
    const listTasksSpoilt: Behaviour = { ...behaviour, deviations: [{ kind: 'rpcId', method: 'ListTasks', id: 'other', body: 'misrouted' }] };
    expect(names({ delegation: gaveUp, behaviour: listTasksSpoilt, sendNamedTask: false })).toEqual([]);
    expect(names({ delegation: gaveUp, behaviour: listTasksSpoilt, sendNamedTask: true })).toEqual(['outcome-not-adopted']);
    expect(names({ delegation: gaveUp, sendNamedTask: false })).toEqual(['outcome-not-adopted']);
    const manyParts = { ...base.delegation!, artifacts: [{ artifactId: 'big', parts: Array.from({ length: 1_001 }, () => ({ text: 'p' })) }] } as RunObservation['delegation'];
    expect(names({ delegation: manyParts })).toEqual(['over-limit-journaled', 'completed-without-result']);
    expect(names({ calls: Array.from({ length: DEFAULT_LIMITS.maxCallsWithoutProgress + 1 }, () => ({ site: 'GetTask', atMs: 10_000 })) })).toEqual(['calls-without-progress']);
    expect(names({ maxRssBytes: 100 + DEFAULT_LIMITS.rssHeadroomBytes + 1 })).toEqual(['worker-rss']);
    expect(names({ oversizedKeys: [{ key: 'k', bytes: DEFAULT_LIMITS.maxKeyBytes + 1 }] })).toEqual(['redis-key-size']);
  });

  it('flag the breaches of what an answer proves', () => {
    const view = (fields: Record<string, unknown>) => ({ ...base.delegation!, ...fields }) as unknown as RunObservation['delegation'];
    expect(names({ delegation: view({ artifacts: [] }) })).toEqual(['completed-without-result']);
    const failedStory: Behaviour = { story: { final: 'FAILED', workMs: 0, chunks: 0 }, deviations: [] };
    const message = (text: string) => ({ messageId: 'x', role: 'ROLE_AGENT', parts: [{ text }] });
    expect(names({ behaviour: failedStory, delegation: view({ state: 'FAILED', artifacts: [], statusMessage: message('failed-r1') }) })).toEqual([]);
    expect(names({ behaviour: failedStory, delegation: view({ state: 'FAILED', artifacts: [], statusMessage: message('Generating response...') }) })).toEqual(['stale-status-message']);
    const limitFailed = view({ state: 'FAILED', artifacts: [], error: { code: 'LIMIT_EXCEEDED', message: 'over' } });
    expect(names({ delegation: limitFailed, workflow: { state: 'FAILED' } })).toEqual(['outcome-not-adopted', 'failed-after-delivery']);
    const big = [{ artifactId: 'm', metadata: { blob: 'm'.repeat(ARTIFACT_BUDGET_BYTES) }, parts: [{ text: 'result-r1' }] }];
    expect(names({ delegation: view({ artifacts: big }) })).toEqual(['artifact-budget']);
    const overLimit: Behaviour = { ...behaviour, deviations: [{ kind: 'overLimitAnswer', path: 'send', shape: 'parts', amount: 1_001 }] };
    expect(names({ behaviour: overLimit, delegation: view({ state: 'AMBIGUOUS', artifacts: [], error: { code: 'PROTOCOL_ERROR', message: 'x' } }) })).toEqual(['limit-not-journaled']);
    expect(names({ behaviour: overLimit, delegation: view({ state: 'AMBIGUOUS', artifacts: [], error: { code: 'LIMIT_EXCEEDED', message: 'x' } }) })).toEqual([]);
    const nullId: Behaviour = { ...behaviour, deviations: [{ kind: 'envelopeId', site: 'SendMessage', id: 'null' }] };
    expect(names({ behaviour: nullId, calls: [...base.calls, { site: 'ListTasks', atMs: 0 }] })).toEqual(['content-proof-ignored']);
    expect(names({ authHandlerRuns: 4 })).toEqual(['auth-handler-unbounded']);
    const forever: Behaviour = { ...behaviour, deviations: [{ kind: 'authChallenges', times: ALWAYS, intervalMs: 100 }] };
    expect(names({ behaviour: forever, delegation: view({ state: 'AMBIGUOUS', artifacts: [], error: { code: 'NO_PROGRESS', message: 'x' } }) })).toEqual(['auth-not-journaled']);
    const recycling: Behaviour = { ...behaviour, deviations: [{ kind: 'recycling', workMs: 1_000, updateEveryMs: 100, cutAfterUpdates: 1 }] };
    expect(names({ behaviour: recycling, settledAtMs: SETTLE_AFTER_FINAL_MS + 1 })).toEqual(['slow-after-final']);
    expect(names({ behaviour: recycling, settledAtMs: 200 })).toEqual([]);
  });
});

describe('100 generated deviating agents against one fleet', () => {
  const redisServer = useRedisServer();
  let session: FuzzSession | undefined;
  beforeAll(async () => {
    session = await startFuzzSession({ redisUrl: redisServer().url, deadlineMs: 10_000, quietMs: 150 });
  });
  afterAll(async () => {
    await session?.close();
  });

  it('A35 (held send): a task found by a ListTasks summary while the send is held is read in full before it is journaled', async () => {
    const heldSummary: Behaviour = { story: { final: 'COMPLETED', workMs: 0, chunks: 1 }, deviations: [{ kind: 'listSummary', lostSend: 'beforeHeaders', includeArtifacts: 'ignored' }] };
    const outcome = await session!.run(heldSummary);
    expect(outcome.violations).toEqual([]);
    expect(outcome.trace).toMatch(/ListTasks@\d+ GetTask@\d+/);
  }, 60_000);

  it(`break no invariant (kinds: ${IN_SUITE_KINDS.join(', ')})`, async () => {
    const finals: string[] = [];
    const options = {
      session: session!,
      kinds: IN_SUITE_KINDS,
      numRuns: 100,
      seed: SEED,
      onRun: (behaviour: Behaviour) => finals.push(behaviour.story.final),
    };
    await fc.assert(conformanceProperty(options), conformanceParameters(options));
    // 100 real runs against one fleet, every agent outcome among them.
    expect(finals).toHaveLength(100);
    expect(new Set(finals)).toEqual(new Set(['COMPLETED', 'FAILED', 'REJECTED']));
    expect(session!.fleetsStarted()).toBe(1);
  }, 300_000);
});
