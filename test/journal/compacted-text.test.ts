/**
 * The settle's compacted record built by the worker (compacted-record-text.ts, handed to updateWorkflow-4.lua) is
 * the same bytes as the record the script builds in Lua from the same rows (lua/includes/compaction.lua): random
 * finished workflows (1 to 4 delegations, artifacts, questions, histories, unicode, '-0', '[]' and '{}', JSON with
 * '"="', control characters, '/', digits past 15, unknown fields) are written twice under two prefixes, one finished
 * without rows (Lua builds the text), one with them (the worker's text, kept when every row is current). And a row
 * changed between the worker's read and the finish (a fence, a push config state, a version, the workflow's count of
 * dropped history entries) is never lost: the
 * script refuses the stale text and compacts from the rows as they are. Real Redis, the real scripts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Journal, type DelegationRecord, type WorkflowRecord } from '@durable-a2a/shared';
import { COMPACTED_RECORD_LAYOUT } from '../../packages/shared/src/journal/compacted-record.ts';
import { DelegationRecordSchema } from '../../packages/shared/src/journal/record.ts';
import { rememberStoredRow } from '../../packages/shared/src/journal/stored-rows.ts';
import { useRedisClient, useRedisServer, testsOnCluster } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

const CARD = 'http://agent.example/.well-known/agent-card.json';
const FINAL = ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED', 'AMBIGUOUS', 'LOST'] as const;
const RUNNING = ['WORKING', 'INPUT_REQUIRED'] as const;

/** Strings a row may hold: unicode, escapes, digits (short, long, '-0', '0'), JSON texts with and without '"="'. */
const unicode = fc.string({ unit: 'grapheme', maxLength: 12 });
const awkward = fc.constantFrom('', '0', '-0', '007', '12', '1234567890123456', '=', '"="', '[]', '{}', 'a/b', 'tab\there', 'nul\u0000', 'del\u007f', 'back\\slash', 'quote"d', 'é€😀', '{"=":"="}', '[1,-0,"x"]');
const jsonText = fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value));
const value = fc.oneof(unicode, awkward, jsonText, fc.nat().map(String), fc.string({ unit: 'binary-ascii', maxLength: 8 }));

/** Any field of the layout's order (operational ones too: they are left out), sometimes one outside it. */
const extraFields = fc.dictionary(fc.oneof({ weight: 40, arbitrary: fc.constantFrom(...COMPACTED_RECORD_LAYOUT.order) }, { weight: 1, arbitrary: fc.constantFrom('retry:x', 'unknownField') }), value, { maxKeys: 6 });

const delegationShape = fc.record({
  state: fc.constantFrom(...FINAL),
  kind: fc.constantFrom(undefined, 'step', 'compensation'),
  idIsStepAttempt: fc.boolean(),
  sameCreatedAt: fc.boolean(),
  updatedIsFinished: fc.boolean(),
  contextId: fc.option(unicode, { nil: undefined }),
  requestedIsContext: fc.boolean(),
  taskId: fc.option(fc.oneof(unicode, awkward), { nil: undefined }),
  statusMessage: fc.option(fc.oneof(jsonText, awkward, fc.constant('marked')), { nil: undefined }),
  stamped: fc.boolean(),
  statusTimestamp: fc.option(fc.constantFrom('2026-12-05T03:13:20.960Z', 'not a time', ''), { nil: undefined }),
  question: fc.option(jsonText, { nil: undefined }),
  artifacts: fc.array(fc.record({ id: unicode, meta: fc.oneof(jsonText, awkward), parts: fc.oneof(fc.constant('[]'), jsonText, awkward) }), { maxLength: 2 }),
  extra: extraFields,
});

const workflowShape = fc.record({
  createdAt: fc.oneof(fc.constantFrom('1000', '1796440400914', '', 'soon'), fc.nat().map(String)),
  definitionExtra: fc.oneof(unicode, awkward),
  stepAgentIsCard: fc.boolean(),
  markDefinition: fc.boolean(),
  history: fc.array(jsonText, { maxLength: 3 }),
  extra: extraFields,
  delegations: fc.array(delegationShape, { minLength: 1, maxLength: 4 }),
  finish: fc.constantFrom('COMPLETED', 'FAILED', 'CANCELED'),
  now: fc.constantFrom(5_000, 1_796_440_401_000),
});

type WorkflowShape = typeof workflowShape extends fc.Arbitrary<infer T> ? T : never;

const jsonFields = new Set(COMPACTED_RECORD_LAYOUT.json);
/**
 * Extra fields as the journal would hold them: a JSON field's text starting with '{' or '[' is JSON (both builders
 * embed it as it is; the journal writes these fields with JSON.stringify), anything else is kept as a string.
 */
function asStored(extra: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(extra).map(([field, text]) => {
      if (!jsonFields.has(field) || !/^[[{]/.test(text)) return [field, text];
      try {
        JSON.parse(text);
        return [field, text];
      } catch {
        return [field, `x${text}`];
      }
    }),
  );
}

/** The rows of one generated workflow (field → value), its delegation ids in list order, artifacts and history. */
function rowsOf(workflowId: string, shape: WorkflowShape) {
  const steps = shape.delegations.map((_, index) => ({ name: `s${index}`, agent: shape.stepAgentIsCard ? CARD : 'http://agent.example', message: { text: shape.definitionExtra } }));
  const definition = JSON.stringify(shape.markDefinition ? { workflowId, steps } : { steps, workflowId, note: shape.definitionExtra });
  const workflow: Record<string, string> = { ...asStored(shape.extra), workflowId, state: 'RUNNING', definition, createdAt: shape.createdAt, updatedAt: '4000', tenant: 'default', version: '7' };
  if (shape.history.length > 0) workflow.historyBytes = String(shape.history.join('').length);
  else delete workflow.historyBytes;
  const delegations = shape.delegations.map((d, index) => {
    const step = `s${index}`;
    const id = d.idIsStepAttempt ? `${step}.1` : `${step}.x${index}`;
    const contextId = d.contextId;
    const statusMessage = d.statusMessage === 'marked' ? JSON.stringify({ role: 'agent', contextId: contextId ?? 'c', taskId: d.taskId ?? 't', parts: [] }) : d.statusMessage;
    const message = JSON.stringify({ parts: [{ text: 'go' }], metadata: d.stamped ? { durableA2a: { workflowId, step, attempt: 1 } } : {} });
    const row: Record<string, string> = {
      ...asStored(d.extra),
      workflowId,
      delegationId: id,
      step,
      attempt: '1',
      agentCardUrl: CARD,
      messageId: `m-${index}`,
      state: d.state,
      message,
      createdAt: d.sameCreatedAt ? shape.createdAt : '2000',
      updatedAt: d.updatedIsFinished ? '3000' : '3001',
      finishedAt: '3000',
      version: String(3 + index),
    };
    if (d.kind !== undefined) row.kind = d.kind;
    if (contextId !== undefined) row.contextId = contextId;
    if (d.requestedIsContext && contextId !== undefined) row.requestedContextId = contextId;
    if (d.taskId !== undefined) row.taskId = d.taskId;
    if (statusMessage !== undefined) row.statusMessage = statusMessage;
    if (d.statusTimestamp !== undefined) row.statusTimestamp = d.statusTimestamp;
    if (d.question !== undefined) row.question = d.question;
    row.state = d.state; // a generated extra field never makes a row unfinished
    delete row.artifactBytes;
    const artifacts: string[] = [];
    d.artifacts.forEach((artifact, order) => artifacts.push(`order:${artifact.id}`, String(order + 1), `meta:${artifact.id}`, artifact.meta, `parts:${artifact.id}`, artifact.parts, `bytes:${artifact.id}`, '5', `sealed:${artifact.id}`, '1'));
    return { id, row, artifacts };
  });
  return { workflow, delegations };
}

/** Writes the rows under `journal`'s prefix, in the same order each time (so the hashes' own order is the same). */
async function writeRows(journal: Journal, workflowId: string, rows: ReturnType<typeof rowsOf>, history: string[]) {
  const base = journal.keys.workflow(workflowId).slice(0, -':wf'.length);
  const client = redis();
  await client.hset(journal.keys.workflow(workflowId), rows.workflow);
  for (const { id, row, artifacts } of rows.delegations) {
    await client.rpush(`${journal.keys.workflow(workflowId)}:delegations`, id);
    await client.hset(`${base}:d:${id}`, row);
    if (artifacts.length > 0) await client.hset(`${base}:d:${id}:artifacts`, ...artifacts);
  }
  if (history.length > 0) await client.rpush(`${base}:history`, ...history);
}

/** Typed stand-ins remembering their rows, as the journal's reads leave them (only the stored row is read from them). */
function finishingRows(rows: ReturnType<typeof rowsOf>) {
  return {
    workflow: rememberStoredRow({} as WorkflowRecord, rows.workflow),
    delegations: rows.delegations.map(({ id, row }) => rememberStoredRow({ delegationId: id } as DelegationRecord, row)),
  };
}

let counter = 0;

describe.skipIf(testsOnCluster())('compacted record built by the worker (property, real Redis)', () => {
  it("knows every field of a delegation row (a field outside the layout's order leaves every settle to Lua)", () => {
    const fields = Object.keys(DelegationRecordSchema.in.shape);
    expect(fields.length).toBeGreaterThan(40);
    expect(fields.filter((field) => !COMPACTED_RECORD_LAYOUT.order.includes(field))).toEqual([]);
  });

  it('is byte for byte the record the script builds in Lua from the same rows, and kept whenever it could be built', async () => {
    let kept = 0;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(workflowShape, async (shape) => {
        counter++;
        const workflowId = `ct-${counter}`;
        const options = { retentionMs: 60_000, now: () => shape.now };
        const inLua = new Journal(redis(), { prefix: `ctlua${counter}`, ...options });
        const inNode = new Journal(redis(), { prefix: `ctnode${counter}`, ...options });
        const rows = rowsOf(workflowId, shape);
        await writeRows(inLua, workflowId, rows, shape.history);
        await writeRows(inNode, workflowId, rows, shape.history);
        await inLua.finishWorkflow(workflowId, { state: shape.finish }, 7, []);
        const result = await inNode.finishWorkflow(workflowId, { state: shape.finish }, 7, [], finishingRows(rows));
        const luaText = await redis().get(inLua.keys.finished(workflowId));
        const nodeText = await redis().get(inNode.keys.finished(workflowId));
        expect((JSON.parse(luaText ?? '{}') as { delegations?: unknown[] }).delegations).toHaveLength(rows.delegations.length);
        expect(nodeText).toBe(luaText);
        const unknown = [rows.workflow, ...rows.delegations.map(({ row }) => row)].some((row) => Object.keys(row).some((field) => !COMPACTED_RECORD_LAYOUT.order.includes(field)));
        if (!unknown && /^[0-9]+$/.test(shape.createdAt)) expect(result.recordTextKept).toBe(true);
        if (unknown) expect(result.recordTextKept).toBe(false);
        if (result.recordTextKept) kept++;
        runs++;
      }),
      { numRuns: 150 },
    );
    // The property says something only if most workflows took the worker's text.
    expect(kept).toBeGreaterThan(runs / 2);
  });

  it('a row changed after the worker read it (fence, push config, version) is refused as text and compacted as it is now', async () => {
    const changes: [string, (journal: Journal, ref: { workflowId: string; delegationId: string }) => Promise<unknown>][] = [
      ['none', async () => undefined],
      ['fence (a lease taken, no version bump)', (journal, ref) => journal.claim(ref, 'someone')],
      ['push config state (no version bump)', (journal, ref) => journal.notePushConfig(ref, 'any', 'deleted', 'cfg-1')],
      ['effect (a version bump)', (journal, ref) => journal.recordEffect(ref, 'present', { seen: true })],
      // history.lua counts entries dropped past its bounds on the workflow row without a version bump (written here
      // as it would after 500 entries).
      ['history dropped count (no version bump)', (journal, ref) => redis().hset(journal.keys.workflow(ref.workflowId), 'historyDropped', '3')],
    ];
    for (const [name, change] of changes) {
      counter++;
      const workflowId = `cc-${counter}`;
      const journal = new Journal(redis(), { prefix: `ctchange${counter}`, retentionMs: 60_000, now: () => 5_000 });
      const ref = { workflowId, delegationId: 'main.1' };
      await journal.createWorkflow(workflowId, { state: 'RUNNING', definition: JSON.stringify({ workflowId, steps: [{ name: 'main', agent: CARD, message: { text: 'x' } }] }), createdAt: '1000' }, intentRow(workflowId));
      // The finishing transition returns both rows as written: what the settle builds the text from.
      const applied = await journal.applyStatus(ref, { mode: 'outcome', state: 'COMPLETED', result: { ok: true } });
      if (!applied.applied || !applied.record || !applied.finishedWorkflow) throw new Error('the finishing transition returned no rows');
      await change(journal, ref);
      const live = await journal.getDelegation(ref);
      const liveWorkflow = await journal.getWorkflow(workflowId);
      const { recordTextKept } = await journal.finishWorkflow(workflowId, { state: 'COMPLETED' }, applied.finishedWorkflow.record.version, [ref], {
        workflow: applied.finishedWorkflow.record,
        delegations: [applied.record],
      });
      expect(recordTextKept, name).toBe(name === 'none');
      // Nothing lost: the compacted row reads back as the row was at the finish, whichever path wrote it.
      const after = await journal.getDelegation(ref);
      expect(await journal.isCompacted(workflowId), name).toBe(true);
      expect({ ...after, updatedAt: 0 }, name).toEqual({ ...live, updatedAt: 0 });
      expect((await journal.getWorkflow(workflowId))?.historyDropped, name).toBe(liveWorkflow?.historyDropped);
    }
  });
});
