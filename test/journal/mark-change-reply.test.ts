/**
 * Property (markSending's change reply): the send holds the row it read; when the row is still at that record's
 * version at the mark, markSending hands back the record as the mark left it (the read record with the mark's writes
 * merged), and the status change applied to it after the send (the send's answer) replies with the change only and
 * returns the record a read gives. Whatever happened between the read and the mark (claims, a version bump, progress
 * and push config notes) and whatever record the caller holds (the latest read, an older one, a copy, a plain ref).
 * Real Redis, the real scripts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DelegationRecord, DelegationRef, Journal } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { hgetallCalls, journalWithIntent } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

/** Fields other scripts write without a version bump (a held record may lack them; a status change replies with them). */
const UNVERSIONED = new Set(['noProgressMark', 'noProgressSince', 'noProgressCount', 'noProgressLast', 'pushConfigState', 'pushConfigId']);

const between = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant<'claim'>('claim') }),
    fc.record({ kind: fc.constant<'bump'>('bump') }),
    fc.record({ kind: fc.constant<'noProgress'>('noProgress') }),
    fc.record({ kind: fc.constant<'pushConfig'>('pushConfig') }),
  ),
  { maxLength: 3 },
);
const scenario = fc.record({
  before: between,
  after: between,
  held: fc.constantFrom<'latest' | 'older' | 'copy' | 'ref'>('latest', 'latest', 'latest', 'older', 'copy', 'ref'),
  claim: fc.boolean(),
  agentInterface: fc.boolean(),
});

/** An arbitrary's value type. */
type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;

let counter = 0;
const paths = { record: 0, none: 0 };

/** One write between reads: a claim (fence, no version bump), an INTENT outcome (version bump), or a note. */
async function write(journal: Journal, ref: DelegationRef, kind: 'claim' | 'bump' | 'noProgress' | 'pushConfig'): Promise<void> {
  if (kind === 'claim') await journal.claim(ref, 'worker-x');
  if (kind === 'bump') await journal.applyStatus(ref, { mode: 'outcome', state: 'INTENT', error: { code: 'AGENT_UNREACHABLE', message: 'try again', retryable: true } });
  if (kind === 'noProgress') await journal.noteNoProgress(ref, `m-${counter}`, 'seen');
  if (kind === 'pushConfig') await journal.notePushConfig(ref, 'any', 'creating', 'cfg-1');
}

describe('markSending: the record as the mark left it (property, real Redis)', () => {
  it('is handed back exactly when the caller held the row at its version, and the answer applied to it reads back', async () => {
    await fc.assert(fc.asyncProperty(scenario, run), { numRuns: 120 });
    expect(paths.record).toBeGreaterThan(15);
    expect(paths.none).toBeGreaterThan(10);
  });
});

async function run(input: ValueOf<typeof scenario>): Promise<void> {
  const { journal, ref, record: older } = await journalWithIntent(redis(), { prefix: `mark-reply-${++counter}`, workflowId: `w-${counter}`, now: () => 5_000 + counter });
  for (const step of input.before) await write(journal, ref, step.kind);
  const latest = (await journal.getDelegation(ref))!;
  for (const step of input.after) await write(journal, ref, step.kind);
  const now = (await journal.getDelegation(ref))!;
  const held: DelegationRef | DelegationRecord = input.held === 'latest' ? latest : input.held === 'older' ? older : input.held === 'copy' ? { ...latest } : ref;
  const agentInterface = input.agentInterface ? { url: 'http://agent.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' } : undefined;
  const marked = await journal.markSending(held, now.fence, agentInterface, { token: 'send-x', durationMs: 30_000, claim: input.claim });
  const read = (await journal.getDelegation(ref))!;
  const heldAtVersion = (input.held === 'latest' && latest.version === now.version) || (input.held === 'older' && older.version === now.version);
  expect(marked.record !== undefined, JSON.stringify(input)).toBe(heldAtVersion);
  expect(marked.fence).toBe(read.fence);
  if (!marked.record) {
    paths.none++;
    return;
  }
  paths.record++;
  // The row as the mark left it: the same keys in the same order and the same values as a read, but for the fields
  // written without a version bump after the held read (the next status change replies with those).
  const withoutUnversioned = (record: DelegationRecord) => Object.entries(record).filter(([key]) => !UNVERSIONED.has(key));
  expect(withoutUnversioned(marked.record), JSON.stringify(input)).toStrictEqual(withoutUnversioned(read));
  // The send's answer applied to it: the change reply (no HGETALL of the delegation row), the record a read gives.
  const isCluster = redis().isCluster;
  const before = isCluster ? 0 : await hgetallCalls(redis());
  const answered = await journal.applyStatus(ref, { mode: 'snapshot', state: 'WORKING', taskId: `t-${counter}`, agentCardUrl: 'http://agent.example/.well-known/agent-card.json', held: marked.record, endsLease: { token: 'send-x', when: 'always' } });
  const calls = isCluster ? 0 : (await hgetallCalls(redis())) - before;
  expect(answered.applied).toBe(true);
  if (!isCluster) expect(calls, JSON.stringify(input)).toBe(0);
  const after = (await journal.getDelegation(ref))!;
  expect(Object.entries(answered.applied ? answered.record! : {}), JSON.stringify(input)).toStrictEqual(Object.entries(after));
}
