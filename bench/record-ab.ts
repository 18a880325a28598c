/**
 * Same-process A/B of the worker's record work for one delegation, two checkouts' `record-parse.ts` loaded side by
 * side: the parse of the row as the send reads it (INTENT), then the three merges a one-step delegation makes
 * (markSending, the send's answer, the one-step finish), each record read once (`Object.keys` and every value, as
 * the producer's `summarize` and the encoders do). Batches alternate A, B / B, A; the first two are warm-up. Prints
 * ns a call (min and median of the batches) for the whole, the parse alone and the merges alone. No Redis.
 *
 *   pnpm tsx --conditions=@durable-a2a/source bench/record-ab.ts <checkout A> <checkout B> [batches 12] [calls 20000]
 *   node --allow-natives-syntax --conditions=@durable-a2a/source --import tsx bench/record-ab.ts <checkout>
 *
 * The side loaded first tends to come out a few per cent faster (its code warms up first): run it twice, A and B
 * swapped, and read the two runs together. With one checkout and `--allow-natives-syntax`, whether its parsed and
 * merged records are fast objects (`%HasFastProperties`; false is V8's dictionary mode, where every property read is
 * a hash lookup), in a process where nothing else built records: a record built by keyed stores into `{}` follows
 * hidden-class transitions that any earlier spread of the same keys made, and is then fast too (docs/performance.md,
 * branch cpu35), so the check is only meaningful for the first code that builds such records in a process.
 */
import { resolve } from 'node:path';

type RecordParse = typeof import('../packages/shared/src/journal/record-parse.ts');
type Record_ = Readonly<Record<string, unknown>>;

const [checkoutA, checkoutB, batchesArgument, callsArgument] = process.argv.slice(2);
if (!checkoutA) throw new Error('usage: record-ab.ts <checkout A> [<checkout B> [batches] [calls]]');
const batches = Number(batchesArgument ?? 12);
const calls = Number(callsArgument ?? 20_000);
const recordParseOf = async (checkout: string) => (await import(`${resolve(checkout)}/packages/shared/src/journal/record-parse.ts`)) as RecordParse;

const message = JSON.stringify({ parts: [{ text: 'do the thing' }], metadata: { durableA2a: { workflowId: 'w1', step: 'main', attempt: 1 } } });
/** A one-step delegation's row as the send reads it. */
const row: Record<string, string> = {
  workflowId: 'w1', delegationId: 'main.1', step: 'main', kind: 'step', attempt: '1', agentCardUrl: 'http://127.0.0.1:1/card', messageId: 'm1',
  state: 'INTENT', message, createdAt: '10', updatedAt: '10', priority: '0', version: '1', fence: '1',
};
const agentInterface = JSON.stringify({ url: 'http://127.0.0.1:1/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
/** The changes of markSending (with a claim), the send's answer and the one-step finish, as their scripts reply. */
const changes: Record<string, string>[] = [
  { sendStartedAt: '11', updatedAt: '11', sendCount: '1', version: '2', agentInterface, fence: '2', owner: 'token' },
  { state: 'WORKING', taskId: 't1', contextId: 'c1', statusTimestamp: '2026-01-01T00:00:00Z', statusTimestampMs: '1767225600000', updatedAt: '12', version: '3' },
  { state: 'COMPLETED', finishedAt: '13', updatedAt: '13', version: '4', result: JSON.stringify({ parts: [{ text: 'done' }] }) },
];

let sink = 0;
function readAll(record: Record_): void {
  for (const key of Object.keys(record)) if (record[key] !== undefined) sink++;
}

/** The parse of `row` and the three merges after it, with `module`. */
function recordsOf(module: RecordParse): Record_[] {
  const records: Record_[] = [module.parseDelegationHash(row)];
  for (const change of changes) records.push(module.mergeDelegationChange(records.at(-1) as never, change)!);
  return records;
}

if (!checkoutB) {
  let hasFastProperties: (value: object) => boolean;
  try {
    // V8's intrinsic, a syntax error without --allow-natives-syntax.
    hasFastProperties = new Function('value', 'return %HasFastProperties(value)') as (value: object) => boolean;
  } catch {
    throw new Error('one checkout: the fast-properties check, which needs node --allow-natives-syntax');
  }
  const records = recordsOf(await recordParseOf(checkoutA));
  console.log(`fast objects (parse, markSending, answer, finish): ${records.map((record) => hasFastProperties(record)).join(' ')}`);
} else {
  const sides = { A: await recordParseOf(checkoutA), B: await recordParseOf(checkoutB) };
  type Mode = 'whole' | 'parse' | 'merges';
  const held = { A: sides.A.parseDelegationHash(row), B: sides.B.parseDelegationHash(row) };
  const work = (side: 'A' | 'B', mode: Mode): void => {
    const module = sides[side];
    if (mode === 'parse') {
      sink += module.parseDelegationHash(row).version;
      return;
    }
    let record = mode === 'merges' ? held[side] : module.parseDelegationHash(row);
    if (mode === 'whole') readAll(record);
    for (const change of changes) {
      record = module.mergeDelegationChange(record, change)!;
      if (mode === 'whole') readAll(record);
    }
  };
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  for (const mode of ['whole', 'parse', 'merges'] as const) {
    const times: Record<'A' | 'B', number[]> = { A: [], B: [] };
    for (let batch = 0; batch < batches; batch++) {
      for (const side of batch % 2 ? (['B', 'A'] as const) : (['A', 'B'] as const)) {
        const started = process.cpuUsage();
        for (let call = 0; call < calls; call++) work(side, mode);
        const used = process.cpuUsage(started);
        if (batch >= 2) times[side].push(((used.user + used.system) * 1000) / calls);
      }
    }
    const figures = (side: 'A' | 'B') => `min ${Math.min(...times[side]).toFixed(0)}, median ${median(times[side]).toFixed(0)} ns`;
    console.log(`${mode.padEnd(6)} A ${figures('A')}; B ${figures('B')}; B ÷ A (medians) ${(median(times.B) / median(times.A)).toFixed(3)}`);
  }
}
if (sink < 0) console.log(sink);
