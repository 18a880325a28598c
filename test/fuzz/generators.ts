/**
 * fast-check generators: one per deviation kind, and a behaviour generator
 * over a chosen set of kinds (1 or 2 deviations of distinct kinds plus a
 * story). Shrinking goes toward fewer deviations, smaller amounts, and the
 * first alternative of each choice, so the printed counterexample is the
 * smallest behaviour that still breaks an invariant.
 */
import fc from 'fast-check';
import { ALWAYS, ARTIFACT_BUDGET_BYTES, METHODS, STATE_SPELLINGS, type Behaviour, type Deviation, type DeviationKind, type Story } from './grammar.ts';

const MEBIBYTE = 1 << 20;
const FIFTEEN_MINUTES_MS = 15 * 60_000;

/** How many calls a hang or an error lasts: a few (transient), or every call of the run. */
const TIMES = fc.oneof(fc.integer({ min: 1, max: 3 }), fc.constant(ALWAYS));

type Generator<K extends DeviationKind> = fc.Arbitrary<Extract<Deviation, { kind: K }>>;

/** The documented defaults the oversized amounts are drawn above (docs/operations.md "Limits and deadlines"). */
export const LIMITS = { bodyBytes: 16 * MEBIBYTE, eventBytes: 8 * MEBIBYTE, parts: 1_000, depth: 64, cardBytes: MEBIBYTE } as const;

const oversized: Generator<'oversized'> = fc.oneof(
  fc.record({ kind: fc.constant('oversized'), where: fc.constant('card'), shape: fc.constant('bytes'), amount: fc.integer({ min: LIMITS.cardBytes + 1, max: 4 * MEBIBYTE }) }),
  fc.record({
    kind: fc.constant('oversized'),
    where: fc.constantFrom('streamEvent', 'artifact'),
    shape: fc.constant('bytes'),
    amount: fc.integer({ min: LIMITS.bodyBytes + 1, max: 24 * MEBIBYTE }),
  }),
  fc.record({ kind: fc.constant('oversized'), where: fc.constantFrom('streamEvent', 'artifact'), shape: fc.constant('parts'), amount: fc.integer({ min: LIMITS.parts + 1, max: 5_000 }) }),
  fc.record({ kind: fc.constant('oversized'), where: fc.constantFrom('streamEvent', 'artifact'), shape: fc.constant('depth'), amount: fc.integer({ min: LIMITS.depth + 1, max: 5_000 }) }),
) as Generator<'oversized'>;

const overLimitAnswer: Generator<'overLimitAnswer'> = fc.oneof(
  fc.record({ kind: fc.constant('overLimitAnswer'), path: fc.constantFrom('send', 'follow', 'followAndRead'), shape: fc.constant('parts'), amount: fc.integer({ min: LIMITS.parts + 1, max: 3_000 }) }),
  fc.record({ kind: fc.constant('overLimitAnswer'), path: fc.constantFrom('send', 'follow', 'followAndRead'), shape: fc.constant('depth'), amount: fc.integer({ min: LIMITS.depth + 1, max: 2_000 }) }),
  fc.record({ kind: fc.constant('overLimitAnswer'), path: fc.constant('send'), shape: fc.constant('bytes'), amount: fc.integer({ min: LIMITS.bodyBytes + 1, max: LIMITS.bodyBytes + MEBIBYTE }) }),
  fc.record({ kind: fc.constant('overLimitAnswer'), path: fc.constantFrom('follow', 'followAndRead'), shape: fc.constant('bytes'), amount: fc.integer({ min: LIMITS.eventBytes + 1, max: LIMITS.eventBytes + MEBIBYTE }) }),
) as Generator<'overLimitAnswer'>;

/** Metadata bytes well under the artifact budget (must be kept) or over it (must be refused with a reason). */
const artifactMetadata: Generator<'artifactMetadata'> = fc.record({
  kind: fc.constant('artifactMetadata'),
  where: fc.constantFrom('metadata', 'name', 'description', 'partMetadata'),
  artifacts: fc.integer({ min: 1, max: 6 }),
  bytes: fc.oneof(fc.integer({ min: 1, max: 256 * 1024 }), fc.integer({ min: ARTIFACT_BUDGET_BYTES + 1, max: ARTIFACT_BUDGET_BYTES + MEBIBYTE })),
}) as Generator<'artifactMetadata'>;

/** One generator per deviation kind. */
export const DEVIATION_GENERATORS: { [K in DeviationKind]: Generator<K> } = {
  rpcId: fc.record({
    kind: fc.constant('rpcId'),
    method: fc.constantFrom('SendMessage', 'GetTask', 'ListTasks'),
    id: fc.constantFrom('other', 'missing', 'null', 'stringified'),
    body: fc.constantFrom('misrouted', 'ours'),
  }),
  foreignTask: fc.record({ kind: fc.constant('foreignTask'), where: fc.constantFrom('send', 'stream', 'getTask', 'list') }),
  stateSpelling: fc.record({ kind: fc.constant('stateSpelling'), styles: fc.array(fc.constantFrom(...STATE_SPELLINGS.filter((style) => style !== 'proto')), { minLength: 1, maxLength: 3 }) }),
  clock: fc.record({
    kind: fc.constant('clock'),
    skewMs: fc.integer({ min: -FIFTEEN_MINUTES_MS, max: FIFTEEN_MINUTES_MS }),
    format: fc.constantFrom('utc', 'zoneless', 'offset', 'missing'),
    terminalBeforeWorking: fc.boolean(),
  }),
  eventOrder: fc.record({
    kind: fc.constant('eventOrder'),
    ops: fc.array(
      fc.oneof(
        fc.record({ op: fc.constantFrom('duplicate', 'drop'), index: fc.nat({ max: 7 }) }),
        fc.record({ op: fc.constant('swap'), index: fc.nat({ max: 7 }), with: fc.nat({ max: 7 }) }),
      ),
      { minLength: 1, maxLength: 4 },
    ),
  }) as Generator<'eventOrder'>,
  earlyFin: fc.record({ kind: fc.constant('earlyFin'), afterEvents: fc.nat({ max: 3 }), midEvent: fc.boolean(), streams: fc.integer({ min: 1, max: 3 }) }),
  keepAliveOnly: fc.record({ kind: fc.constant('keepAliveOnly'), afterSnapshot: fc.boolean(), intervalMs: fc.integer({ min: 50, max: 200 }) }),
  errorCode: fc.record({
    kind: fc.constant('errorCode'),
    method: fc.constantFrom(...METHODS),
    // 1.0 and 0.3 A2A codes, standard JSON-RPC codes, and a server-defined one.
    code: fc.constantFrom(-32603, -32001, -32004, -32002, -32006, -32009, -32600, -32602, -32000),
    data: fc.constantFrom('none', 'errorInfo', 'object'),
    httpStatus: fc.constantFrom(200, 400, 404, 500),
    times: TIMES,
    created: fc.boolean(),
  }),
  resultShape: fc.record({ kind: fc.constant('resultShape'), send: fc.constantFrom('bare', 'bareWithKind', 'wrappedWithKind', 'extraFields') }),
  streamShape: fc.record({ kind: fc.constant('streamShape'), events: fc.constantFrom('wholeTasks', 'kindTagged') }),
  recordSeparator: fc.record({ kind: fc.constant('recordSeparator'), scope: fc.constantFrom('first', 'all') }),
  oversized,
  hang: fc.record({
    kind: fc.constant('hang'),
    site: fc.constantFrom('SubscribeToTask', 'GetTask', 'SendMessage', 'ListTasks', 'AgentCard', 'SendStreamingMessage'),
    phase: fc.constantFrom('beforeHeaders', 'afterHeaders'),
    times: TIMES,
  }) as Generator<'hang'>,
  envelopeId: fc.record({
    kind: fc.constant('envelopeId'),
    site: fc.constantFrom('SendMessage', 'GetTask', 'SendStreamingMessage', 'SubscribeToTask'),
    id: fc.constantFrom('null', 'missing', 'other'),
  }),
  statusFirst: fc.record({ kind: fc.constant('statusFirst'), site: fc.constantFrom('SendStreamingMessage', 'SubscribeToTask'), context: fc.constantFrom('ours', 'omitted') }),
  listSummary: fc.record({ kind: fc.constant('listSummary'), lostSend: fc.constantFrom('beforeHeaders', 'afterHeaders'), includeArtifacts: fc.constantFrom('ignored', 'honoured') }),
  statusMessages: fc.record({ kind: fc.constant('statusMessages'), progress: fc.integer({ min: 1, max: 3 }), bareLast: fc.boolean() }),
  bareMessage: fc.record({ kind: fc.constant('bareMessage'), on: fc.constantFrom('final', 'every'), text: fc.constantFrom('plain', 'unicode', 'long') }),
  artifactMetadata,
  overLimitAnswer,
  authChallenges: fc.record({ kind: fc.constant('authChallenges'), times: fc.oneof(fc.integer({ min: 1, max: 2 }), fc.constant(ALWAYS)), intervalMs: fc.integer({ min: 60, max: 200 }) }),
  // Work shorter than the fuzz no-progress window (2 s): cuts that keep delivering must never end the attempt.
  recycling: fc.record({
    kind: fc.constant('recycling'),
    workMs: fc.integer({ min: 600, max: 1_600 }),
    updateEveryMs: fc.integer({ min: 60, max: 200 }),
    cutAfterUpdates: fc.integer({ min: 1, max: 3 }),
  }),
};

/** The honest story: how the task ends, how long it works, how many artifact chunks. */
export const storyArbitrary: fc.Arbitrary<Story> = fc.record({
  final: fc.constantFrom('COMPLETED', 'FAILED', 'REJECTED'),
  workMs: fc.integer({ min: 0, max: 200 }),
  chunks: fc.integer({ min: 0, max: 3 }),
  streaming: fc.boolean(),
});

/** Behaviours with 1 to `maxDeviations` deviations of distinct kinds, drawn from `kinds`. */
export function behaviourArbitrary(kinds: readonly DeviationKind[], maxDeviations = 2): fc.Arbitrary<Behaviour> {
  if (kinds.length === 0) throw new Error('behaviourArbitrary: no deviation kind selected');
  // uniqueArray (not a chain over chosen kinds) so shrinking can drop a whole deviation.
  const deviation = fc.oneof(...kinds.map((kind) => DEVIATION_GENERATORS[kind] as fc.Arbitrary<Deviation>));
  const deviations = fc.uniqueArray(deviation, { selector: (value) => value.kind, minLength: 1, maxLength: Math.min(maxDeviations, kinds.length) });
  return fc.record({ story: storyArbitrary, deviations });
}
