/**
 * A finished workflow's records read straight from its compacted record (compacted-record-read.ts) are the records
 * the hash path gives (`parseCompactedWorkflow`, then `parseWorkflowHash` and `parseDelegationHash`): the same
 * values, the same keys in the same order, and the same views (`workflowView`, what `waitFor` returns). Random
 * finished workflows (1 to 3 delegations, steps and compensations, marks, artifacts, questions, errors, attention,
 * lists, history, unicode, digits, now and then a field holding something no writer writes) are compacted by the real
 * updateWorkflow-4.lua (real Redis); then random corruptions of those records (a member's value replaced, removed,
 * renamed) must still give the hash path's error, and a read of one a CorruptRecordError.
 */
import { deepStrictEqual } from 'node:assert/strict';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CorruptRecordError, Journal, parseCompactedWorkflow, type WorkflowRecordSnapshot } from '@durable-a2a/shared';
import { workflowView } from '@durable-a2a/producer';
import { readCompactedRecords } from '../../packages/shared/src/journal/compacted-record-read.ts';
import { snapshotOfCompacted, snapshotOfCompactedText } from '../../packages/shared/src/journal/delegations.ts';
import { useRedisClient, useRedisServer, testsOnCluster } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

const CARD = 'http://agent.example/.well-known/agent-card.json';
const NOW = 1_796_440_401_000;
const unicode = fc.string({ unit: 'grapheme', maxLength: 10 });
const id = fc.stringMatching(/^[A-Za-z0-9-]{1,12}$/);
const ms = fc.oneof(fc.constantFrom('1796440400914', '1796440400000', '0', '5'), fc.nat({ max: 2_000_000_000_000 }).map(String));
/** What no writer writes, for one field now and then: empty, digits past 15, '-0', '=', JSON where text belongs and back. */
const odd = fc.constantFrom('', '0', '-0', '007', '1234567890123456', '=', '"="', '[]', '{}', 'null', 'true', '{"a":-0}', '[1,"x"]', 'x');
const text = (value: unknown) => JSON.stringify(value);
/** `arbitrary` one time in ten, else undefined. */
const rarely = <T>(arbitrary: fc.Arbitrary<T>) => fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
const parts = fc.array(fc.oneof(unicode.map((t) => ({ text: t })), fc.jsonValue({ maxDepth: 2 }).map((data) => ({ data }))), { minLength: 1, maxLength: 2 });
/** An agent's message (a status message, a question); `sameIds`: it names the delegation's context and task (the record marks them). */
const agentMessage = fc.record({ messageId: id, role: fc.constantFrom('ROLE_AGENT', 'agent'), parts, sameIds: fc.boolean() });
const messageText = ({ sameIds, ...message }: { sameIds: boolean } & Record<string, unknown>, contextId?: string, taskId?: string) =>
  text({ ...message, contextId: sameIds && contextId ? contextId : 'other', ...(sameIds && taskId ? { taskId } : {}) });

const delegationShape = fc.record({
  state: fc.constantFrom('COMPLETED', 'FAILED', 'CANCELED', 'REJECTED', 'AMBIGUOUS', 'LOST'),
  kind: fc.constantFrom(undefined, 'step', 'compensation'),
  attempt: fc.integer({ min: 1, max: 3 }),
  idIsStepAttempt: fc.boolean(),
  cardIsStepAgent: fc.boolean(),
  contextId: fc.option(id, { nil: undefined }),
  requestedIsContext: fc.boolean(),
  taskId: fc.option(fc.oneof(id, fc.nat().map(String)), { nil: undefined }),
  statusTimestamp: fc.option(fc.constantFrom('2026-12-05T03:13:20.960Z', '2026-12-05 03:13:20', 'not a time'), { nil: undefined }),
  stamped: fc.boolean(),
  text: unicode,
  metadata: fc.option(fc.dictionary(id, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }), { nil: undefined }),
  statusMessage: fc.option(agentMessage, { nil: undefined }),
  question: fc.option(agentMessage, { nil: undefined }),
  result: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
  error: fc.option(fc.record({ code: fc.constantFrom('AGENT_FAILED', 'SOMETHING_NEW'), message: unicode, retryable: fc.boolean() }), { nil: undefined }),
  counts: fc.record({ sendCount: fc.nat({ max: 3 }), resendCount: fc.nat({ max: 2 }), unsentTries: fc.nat({ max: 2 }), provenAbsentSends: fc.nat({ max: 2 }) }),
  times: fc.record({ createdAt: fc.option(ms, { nil: undefined }), updatedAt: fc.option(ms, { nil: undefined }), finishedAt: ms }),
  reply: fc.option(fc.record({ replyMessageId: id, replyState: fc.constantFrom('sent', 'refused'), replyError: unicode, replyBy: fc.constantFrom('expiry', 'link l1') }), { nil: undefined }),
  effect: fc.option(fc.record({ effect: fc.constantFrom('present', 'absent', 'unknown'), evidence: fc.jsonValue({ maxDepth: 2 }) }), { nil: undefined }),
  artifacts: fc.array(fc.record({ id, meta: fc.record({ name: unicode }, { requiredKeys: [] }), parts }), { maxLength: 2 }),
  odd: rarely(fc.tuple(fc.constantFrom('attempt', 'taskId', 'contextId', 'sendCount', 'statusMessage', 'result', 'error', 'push', 'replyState', 'createdAt', 'version', 'message', 'agentInterface'), odd)),
});

const workflowShape = fc.record({
  createdAt: fc.oneof({ weight: 9, arbitrary: ms }, { weight: 1, arbitrary: fc.constantFrom('soon', '') }),
  updatedAt: ms,
  finish: fc.constantFrom('COMPLETED', 'FAILED', 'CANCELED', 'COMPENSATED'),
  skillStep: fc.boolean(),
  markDefinition: fc.boolean(),
  failure: fc.option(fc.array(unicode, { maxLength: 2 }), { nil: undefined }),
  retryApproved: fc.option(fc.array(id, { maxLength: 2 }), { nil: undefined }),
  abandoned: fc.option(fc.array(id, { maxLength: 1 }), { nil: undefined }),
  attention: fc.option(fc.oneof(fc.constant('prose, as an older release wrote it'), fc.record({ code: fc.constantFrom('AMBIGUOUS_SEND', 'NO_PROGRESS'), message: unicode }).map(text)), { nil: undefined }),
  cancelRequested: fc.boolean(),
  historyDropped: fc.option(fc.nat({ max: 9 }).map(String), { nil: undefined }),
  history: fc.array(fc.record({ kind: fc.constantFrom('cancel', 'answer', 'something-new'), at: fc.nat({ max: 1e13 }), by: unicode }).map(text), { maxLength: 2 }),
  odd: rarely(fc.tuple(fc.constantFrom('failure', 'attention', 'historyDropped', 'retry:x', 'cancelRequested', 'stopping', 'retryApproved'), odd)),
  delegations: fc.array(delegationShape, { minLength: 1, maxLength: 3 }),
});
type WorkflowShape = typeof workflowShape extends fc.Arbitrary<infer T> ? T : never;

/** The rows of a generated workflow as the journal would hold them before the finish. */
function rowsOf(workflowId: string, shape: WorkflowShape) {
  const steps = shape.delegations.map((_, index) =>
    shape.skillStep && index === 0 ? { name: `s${index}`, skill: 'lookup', message: { text: 'x' } } : { name: `s${index}`, agent: CARD, message: { text: `do ${index}` } },
  );
  const definition = text(shape.markDefinition ? { workflowId, steps, maxAttemptsPerStep: 3 } : { steps, workflowId, maxAttemptsPerStep: 3, metadata: { note: '=' } });
  const workflow: Record<string, string> = { workflowId, tenant: 'default', state: 'RUNNING', definition, createdAt: shape.createdAt, updatedAt: shape.updatedAt, version: '7' };
  if (shape.failure) workflow.failure = text(shape.failure);
  if (shape.retryApproved) workflow.retryApproved = text(shape.retryApproved);
  if (shape.abandoned) workflow.abandonedCompensations = text(shape.abandoned);
  if (shape.attention) workflow.attention = shape.attention;
  if (shape.cancelRequested) workflow.cancelRequested = '1';
  if (shape.historyDropped) workflow.historyDropped = shape.historyDropped;
  if (shape.history.length > 0) workflow.historyBytes = String(shape.history.join('').length);
  if (shape.odd) workflow[shape.odd[0]] = shape.odd[1];
  const delegations = shape.delegations.map((d, index) => {
    const step = `s${index}`;
    const delegationId = d.idIsStepAttempt ? `${step}.${d.attempt}` : `${step}.x${d.attempt}`;
    const stamp = d.stamped ? { durableA2a: { workflowId, step, attempt: d.attempt } } : {};
    const row: Record<string, string> = {
      workflowId,
      delegationId,
      step,
      attempt: String(d.attempt),
      agentCardUrl: d.cardIsStepAgent ? CARD : 'http://other.example',
      messageId: `m-${index}`,
      state: d.state,
      message: text({ parts: [{ text: d.text }], metadata: { ...stamp, ...d.metadata } }),
      finishedAt: d.times.finishedAt,
      createdAt: d.times.createdAt ?? shape.createdAt,
      updatedAt: d.times.updatedAt ?? d.times.finishedAt,
      version: String(3 + index),
      sendCount: String(d.counts.sendCount),
      resendCount: String(d.counts.resendCount),
      unsentTries: String(d.counts.unsentTries),
      provenAbsentSends: String(d.counts.provenAbsentSends),
      agentInterface: text({ url: 'http://agent.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }),
      pushToken: `secret-${index}`,
    };
    if (d.kind !== undefined) row.kind = d.kind;
    if (d.contextId !== undefined) row.contextId = d.contextId;
    if (d.requestedIsContext && d.contextId !== undefined) row.requestedContextId = d.contextId;
    if (d.taskId !== undefined) row.taskId = d.taskId;
    if (d.statusTimestamp !== undefined) row.statusTimestamp = d.statusTimestamp;
    if (d.statusMessage) row.statusMessage = messageText(d.statusMessage, d.contextId, d.taskId);
    if (d.question) row.question = messageText(d.question, d.contextId, d.taskId);
    if (d.result !== undefined) row.result = text(d.result);
    if (d.error !== undefined) row.error = text(d.error);
    if (d.reply) Object.assign(row, d.reply);
    if (d.effect) Object.assign(row, { effect: d.effect.effect, evidence: text(d.effect.evidence), verifiedAt: d.times.finishedAt });
    if (d.odd) row[d.odd[0]] = d.odd[1];
    return { delegationId, row, artifacts: d.artifacts };
  });
  return { workflow, delegations };
}

let counter = 0;

/** Writes a generated workflow, finishes it with the real script and returns its compacted record, or undefined. */
async function compacted(shape: WorkflowShape): Promise<{ workflowId: string; text: string; journal: Journal } | undefined> {
  counter++;
  const workflowId = `cr-${counter}`;
  const journal = new Journal(redis(), { prefix: `cr${counter}`, retentionMs: 60_000, now: () => NOW });
  const rows = rowsOf(workflowId, shape);
  const client = redis();
  const base = journal.keys.workflow(workflowId).slice(0, -':wf'.length);
  await client.hset(journal.keys.workflow(workflowId), rows.workflow);
  for (const { delegationId, row, artifacts } of rows.delegations) {
    await client.rpush(`${journal.keys.workflow(workflowId)}:delegations`, delegationId);
    await client.hset(`${base}:d:${delegationId}`, row);
    const fields = artifacts.flatMap((artifact, order) => [`order:${artifact.id}`, String(order), `meta:${artifact.id}`, text(artifact.meta), `parts:${artifact.id}`, text(artifact.parts)]);
    if (fields.length > 0) await client.hset(`${base}:d:${delegationId}:artifacts`, ...fields);
  }
  if (shape.history.length > 0) await client.rpush(`${base}:history`, ...shape.history);
  await journal.finishWorkflow(workflowId, { state: shape.finish as 'COMPLETED' }, 7, []);
  const record = await client.get(journal.keys.finished(workflowId));
  return record ? { workflowId, text: record, journal } : undefined;
}

/** The hash path's snapshot, or the message of what it threw. */
function hashPath(workflowId: string, record: string): WorkflowRecordSnapshot | { threw: string } {
  try {
    return snapshotOfCompacted(parseCompactedWorkflow(workflowId, record));
  } catch (error) {
    return { threw: String(error) };
  }
}

/** `snapshotOfCompactedText` (records read as they stand, else the hash path), or the message of what it threw. */
function readPath(workflowId: string, record: string): WorkflowRecordSnapshot | { threw: string } {
  try {
    return snapshotOfCompactedText(workflowId, record);
  } catch (error) {
    return { threw: String(error) };
  }
}

/**
 * The same values (NaN, undefined members included) and the same keys in the same order. node's deepStrictEqual, not
 * toStrictEqual: vitest's compares the objects' `constructor` properties by identity, so two equal objects holding
 * an own member named `constructor` (metadata `{"constructor": []}`: fast-check generates it) would differ.
 */
function expectSame(actual: unknown, expected: unknown): void {
  deepStrictEqual(actual, expected);
  expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
}

/** What `promise` resolves with, or the message of what it rejects with (a row a view cannot show: an instant that is no time). */
async function outcome<T>(promise: Promise<T>): Promise<T | { threw: string }> {
  try {
    return await promise;
  } catch (error) {
    return { threw: String(error) };
  }
}

/** A journal whose finished views come from the hash path (what `workflowView` read before). */
const hashPathJournal = (snapshot: WorkflowRecordSnapshot) => ({ snapshotFromPublished: () => snapshot }) as unknown as Journal;

const collected: { workflowId: string; text: string }[] = [];

describe.skipIf(testsOnCluster())('the finished view read straight from the compacted record (property, real Redis)', () => {
  it('gives the records and the view the hash path gives, on random finished workflows', async () => {
    let readAsItStands = 0;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(workflowShape, async (shape) => {
        const finished = await compacted(shape);
        if (!finished) return;
        runs++;
        const { workflowId, text: record, journal } = finished;
        collected.push({ workflowId, text: record });
        const expected = hashPath(workflowId, record);
        const read = readCompactedRecords(workflowId, record);
        if (read) {
          readAsItStands++;
          expect('threw' in expected).toBe(false);
          const snapshot = expected as WorkflowRecordSnapshot;
          expectSame(read.workflow, snapshot.workflow);
          expectSame(read.delegations, snapshot.delegations);
        }
        expectSame(readPath(workflowId, record), expected);
        if ('threw' in expected) return;
        // The views: the journal's (records read as they stand) and one built from the hash path's records.
        expectSame(await outcome(workflowView(journal, workflowId, record, NOW)), await outcome(workflowView(hashPathJournal(expected), workflowId, record, NOW)));
        expectSame(await journal.getWorkflowSnapshot(workflowId), expected);
      }),
      { numRuns: 150 },
    );
    // The property says something only if most records were read as they stand.
    expect(readAsItStands).toBeGreaterThan(runs / 2);
  });

  it("what the hash path's text would change is left to it: a -0, a mark with nothing to restore, an attempt that is no number", () => {
    // A record as a worker compacts a one-step delegation (the peers bench's), then the cases.
    const base = {
      workflow: { at: 1796450781460, def: { workflowId: '=', steps: [{ agent: CARD, name: 'main', message: { text: 'x' } }], maxAttemptsPerStep: 1 }, state: 'COMPLETED', upd: 123, v: 2 },
      delegations: [
        {
          iface: { url: 'http://agent.example/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          try: 1, ctx: 'c-1', fence: 2, end: 120, mid: 'm-1', askCtx: '=', sends: 1, state: 'COMPLETED', ts: '2026-12-05T06:06:21.551Z', step: 'main', task: 't-1', v: 4,
          msg: { parts: [{ text: 'x' }], metadata: { durableA2a: '=' } },
          smsg: { messageId: 's-1', role: 'ROLE_AGENT', parts: [{ text: 'done' }], contextId: '=', taskId: '=' },
          art: { 'meta:result': {}, 'order:result': '0', 'parts:result': [{ text: 'the result', mediaType: 'text/plain' }] },
        },
      ],
    };
    type Loose = { workflow: Record<string, unknown>; delegations: Record<string, unknown>[] };
    const variant = (change: (record: Loose) => void, raw?: (text: string) => string) => {
      const record = structuredClone(base) as Loose;
      change(record);
      return raw ? raw(JSON.stringify(record)) : JSON.stringify(record);
    };
    const cases: [string, string, boolean][] = [
      ['as compacted', variant(() => undefined), true],
      ['a -0 in an embedded value', variant((r) => (r.delegations[0]!.res = { n: 1 }), (t) => t.replace('"n":1', '"n":-0')), false],
      ['a -0.0e1 in an artifact', variant((r) => ((r.delegations[0]!.art as Record<string, unknown>)['parts:result'] = [{ data: 1 }]), (t) => t.replace('"data":1', '"data":-0.0e1')), false],
      ['a negative decimal', variant((r) => (r.delegations[0]!.res = { n: -0.5 })), true],
      ['a status message marked, no context', variant((r) => delete r.delegations[0]!.ctx), false],
      ['a status message marked, no task', variant((r) => delete r.delegations[0]!.task), false],
      ['a stamp marked, an attempt that is no number', variant((r) => (r.delegations[0]!.try = 'x')), false],
      ['a stamp marked, no step', variant((r) => delete r.delegations[0]!.step), false],
      // Members named as Object.prototype's (fast-check's dictionaries generate them): equal on both paths.
      ['metadata members named constructor and toString', variant((r) => ((r.delegations[0]!.msg as Record<string, unknown>).metadata = { constructor: [], toString: { a: 1 } })), true],
      ['a definition held as its text', variant((r) => (r.workflow.def = JSON.stringify({ ...(r.workflow.def as object), workflowId: 'cr-case', metadata: { note: '=' } }))), true],
    ];
    for (const [name, record, asItStands] of cases) {
      const expected = hashPath('cr-case', record);
      expect(readCompactedRecords('cr-case', record) !== undefined, name).toBe(asItStands);
      expectSame(readPath('cr-case', record), expected);
    }
  });

  it('a corrupted record gives the error the hash path gives, and a read of it CorruptRecordError', async () => {
    expect(collected.length).toBeGreaterThan(20);
    const member = fc.record({ where: fc.constantFrom('workflow', 'delegation', 'artifacts', 'record'), pick: fc.nat(), how: fc.constantFrom('replace', 'remove', 'rename', 'proto') });
    let corrupt = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...collected), member, fc.jsonValue({ maxDepth: 2 }), async ({ workflowId, text: original }, { where, pick, how }, value) => {
        const record = JSON.parse(original) as { workflow: Record<string, unknown>; delegations: Record<string, unknown>[] } & Record<string, unknown>;
        const delegation = record.delegations[pick % record.delegations.length]!;
        const target = where === 'workflow' ? record.workflow : where === 'record' ? record : where === 'artifacts' ? ((delegation.art ??= {}) as Record<string, unknown>) : delegation;
        const names = Object.keys(target);
        const name = names[pick % Math.max(1, names.length)] ?? 'state';
        if (how === 'replace') target[name] = value;
        else if (how === 'remove') delete target[name];
        else if (how === 'rename') target[{ at: 'createdAt', did: 'delegationId', def: 'definition', v: 'version', try: 'attempt' }[name] ?? `${name}x`] = target[name];
        else Object.defineProperty(target, '__proto__', { value, enumerable: true, configurable: true, writable: true });
        const corrupted = JSON.stringify(record);
        const expected = hashPath(workflowId, corrupted);
        expectSame(readPath(workflowId, corrupted), expected);
        if (!('threw' in expected)) return;
        corrupt++;
        // A read of the stored record: the typed error naming its key.
        const journal = new Journal(redis(), { prefix: `crc${++counter}`, retentionMs: 60_000 });
        await redis().set(journal.keys.finished(workflowId), corrupted);
        await expect(journal.getWorkflowSnapshot(workflowId)).rejects.toBeInstanceOf(CorruptRecordError);
        expect(journal.snapshotFromPublished(workflowId, corrupted)).toBeUndefined();
      }),
      { numRuns: 300 },
    );
    expect(corrupt).toBeGreaterThan(20);
  });
});
