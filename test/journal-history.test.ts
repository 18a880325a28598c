/**
 * A workflow's history (journal/history.ts, lua/includes/history.lua; docs/people.md "History"): written by the scripts of
 * the transitions it describes, append-only, bounded in entries and bytes (the oldest dropped and counted), and
 * kept byte for byte in the compacted record when the workflow finishes.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { HISTORY_LIMITS, Journal, historyEntryText, type DelegationRef } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from './harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let counter = 0;
let clock = 0;
let journal: Journal;
let prefix: string;

const definition = (id: string) => JSON.stringify({ workflowId: id, steps: [{ name: 'main', agent: 'http://agent.example/.well-known/agent-card.json', message: { text: 'book a table' } }], maxAttemptsPerStep: 3 });
const intent = (id: string, attempt = 1) => ({
  workflowId: id,
  delegationId: `main.${attempt}`,
  step: 'main',
  kind: 'step',
  attempt: String(attempt),
  agentCardUrl: 'http://agent.example/.well-known/agent-card.json',
  messageId: `m-${id}-${attempt}`,
  state: 'INTENT',
  message: JSON.stringify({ parts: [{ text: 'book a table' }] }),
  createdAt: '1000',
  updatedAt: '1000',
  version: '1',
});

beforeEach(() => {
  prefix = `hist${++counter}`;
  clock = 1_000_000;
  journal = new Journal(redis(), { prefix, retentionMs: 60_000, now: () => ++clock });
});

async function start(id: string): Promise<DelegationRef> {
  await journal.createWorkflow(id, { state: 'RUNNING', definition: definition(id), createdAt: '1000' }, intent(id));
  return { workflowId: id, delegationId: 'main.1' };
}

const question = (text: string, messageId: string) => ({ messageId, role: 'ROLE_AGENT' as const, parts: [{ text }] });
const rawHistory = (id: string) => (redis() as Redis).lrange(`${prefix}:{wf:${id}}:history`, 0, -1);

/** Asks `text`, answers `answer` by `by`, and lets the task go on working (the next question can come). */
async function askAndAnswer(ref: DelegationRef, index: number, text: string, answer: string, by: string): Promise<void> {
  await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusMessage: question(text, `q${index}`) });
  await journal.recordReply(ref, `r${index}`, { parts: [{ text: answer }] }, by);
  await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: 'T1', statusTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString() });
}

describe('the history is written by the transition scripts', () => {
  it('a question, its answer (who, when), a refused answer, a verification, a cancel, a re-delegation; a repeated question once', async () => {
    const ref = await start('w1');
    await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusMessage: question('How many people?', 'q1') });
    // The same question again (a snapshot, a push): no second entry.
    await journal.applyStatus(ref, { mode: 'snapshot', state: 'INPUT_REQUIRED', taskId: 'T1', statusMessage: question('How many people?', 'q1') });
    await journal.recordReply(ref, 'r1', { parts: [{ text: 'six, window seat if possible' }] }, 'token ops-alice');
    await journal.recordReply(ref, 'r2', { parts: [{ text: 'seven' }] }, 'token ops-bob'); // answered already: no entry
    const fence = await journal.claim(ref, 'worker');
    await journal.markReply(ref, fence, 'r1', 'refused', 'the agent wants a number');
    await journal.recordEffect(ref, 'present', { booking: 'B-1' }, 'main');
    await journal.updateWorkflow('w1', { cancelRequested: true }, undefined, { kind: 'cancel', at: 0, by: 'token ops-bob' });
    await journal.createIntent('w1', intent('w1', 2), {
      history: { kind: 'redelegation', at: clock, delegationId: 'main.2', step: 'main', attempt: 2, agentCardUrl: 'http://other.example/card', previous: [{ delegationId: 'main.1', reason: 'FAILED: no table' }] },
    });
    const history = (await journal.getWorkflowSnapshot('w1'))!.history;
    expect(history.dropped).toBe(0);
    expect(history.entries.map((entry) => entry.kind)).toEqual(['question', 'answer', 'answer-refused', 'verification', 'cancel', 'redelegation']);
    expect(history.entries[0]).toMatchObject({ delegationId: 'main.1', step: 'main', state: 'INPUT_REQUIRED', message: { messageId: 'q1', parts: [{ text: 'How many people?' }] } });
    expect(history.entries[1]).toMatchObject({ delegationId: 'main.1', messageId: 'r1', parts: [{ text: 'six, window seat if possible' }], by: 'token ops-alice' });
    expect(history.entries[2]).toMatchObject({ messageId: 'r1', reason: 'the agent wants a number' });
    expect(history.entries[3]).toMatchObject({ effect: 'present', evidence: { booking: 'B-1' } });
    expect(history.entries[4]).toMatchObject({ by: 'token ops-bob' });
    expect(history.entries[5]).toMatchObject({ previous: [{ delegationId: 'main.1', reason: 'FAILED: no table' }] });
    const times = history.entries.map((entry) => entry.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it('an answer delivered replaces the status that asked: a row finished by our own outcome does not show the question', async () => {
    const ref = await start('w-status');
    await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T-status', statusMessage: question('How many people?', 'q1') });
    await journal.recordReply(ref, 'r1', { parts: [{ text: 'six' }] }, 'token a');
    const fence = await journal.claim(ref, 'worker');
    expect(await journal.markReply(ref, fence, 'r1', 'sent')).toBe(true);
    await journal.applyStatus(ref, { mode: 'outcome', state: 'CANCELED', error: { code: 'CANCELED_BY_USER', message: 'canceled' } as never });
    const record = (await journal.getDelegation(ref))!;
    expect(record.state).toBe('CANCELED');
    expect(record.statusMessage).toBeUndefined();
    expect((await journal.getWorkflowSnapshot('w-status'))!.history.entries[0]).toMatchObject({ kind: 'question', message: { parts: [{ text: 'How many people?' }] } });
  });

  it('nothing is appended once the workflow row is gone (no orphan list)', async () => {
    const ref = await start('w2');
    await (redis() as Redis).del(`${prefix}:{wf:w2}:wf`);
    await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusMessage: question('late?', 'q1') });
    expect(await rawHistory('w2')).toEqual([]);
  });

  it('a question larger than an entry keeps its text, cut, and says so', async () => {
    const ref = await start('w3');
    const long = 'é'.repeat(HISTORY_LIMITS.entryBytes);
    await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: 'T1', statusMessage: question(long, 'q-long') });
    const [entry] = await rawHistory('w3');
    expect(Buffer.byteLength(entry!)).toBeLessThanOrEqual(HISTORY_LIMITS.entryBytes);
    const parsed = JSON.parse(entry!) as { cut: boolean; message: { messageId: string; parts: { text: string }[] } };
    expect(parsed.cut).toBe(true);
    expect(parsed.message.messageId).toBe('q-long');
    expect(parsed.message.parts[0]!.text).toBe('é'.repeat(HISTORY_LIMITS.textBytes / 2));
    const answer = historyEntryText({ kind: 'answer', at: 1, delegationId: 'main.1', messageId: 'r', parts: [{ text: long }] });
    expect(Buffer.byteLength(answer)).toBeLessThanOrEqual(HISTORY_LIMITS.entryBytes);
    expect(JSON.parse(answer)).toMatchObject({ cut: true, parts: [{ text: 'é'.repeat(HISTORY_LIMITS.textBytes / 2) }] });
  });
});

describe('bounds', () => {
  it(`a flood of questions and answers keeps at most ${HISTORY_LIMITS.entries} entries and ${HISTORY_LIMITS.bytes} bytes; the oldest are dropped and counted`, async () => {
    const ref = await start('flood');
    const rounds = HISTORY_LIMITS.entries / 2 + 40;
    for (let index = 1; index <= rounds; index++) await askAndAnswer(ref, index, `question ${index}?`, `answer ${index}`, 'token flood');
    const raw = await rawHistory('flood');
    expect(raw.length).toBe(HISTORY_LIMITS.entries);
    expect(raw.reduce((sum, entry) => sum + Buffer.byteLength(entry), 0)).toBeLessThanOrEqual(HISTORY_LIMITS.bytes);
    const history = (await journal.getWorkflowSnapshot('flood'))!.history;
    expect(history.dropped).toBe(rounds * 2 - HISTORY_LIMITS.entries);
    expect(history.entries[0]).toMatchObject({ kind: 'question', message: { messageId: `q${rounds - HISTORY_LIMITS.entries / 2 + 1}` } });
    expect(history.entries.at(-1)).toMatchObject({ kind: 'answer', messageId: `r${rounds}` });
  });

  it('large answers are bounded by bytes before the count', async () => {
    const ref = await start('bytes');
    const big = 'x'.repeat(HISTORY_LIMITS.textBytes);
    for (let index = 1; index <= 40; index++) await askAndAnswer(ref, index, big, big, 'token flood');
    const raw = await rawHistory('bytes');
    expect(raw.length).toBeLessThan(80);
    expect(raw.reduce((sum, entry) => sum + Buffer.byteLength(entry), 0)).toBeLessThanOrEqual(HISTORY_LIMITS.bytes);
    const row = await (redis() as Redis).hmget(`${prefix}:{wf:bytes}:wf`, 'historyBytes', 'historyDropped');
    expect(Number(row[0])).toBe(raw.reduce((sum, entry) => sum + Buffer.byteLength(entry), 0));
    expect(Number(row[1])).toBe(80 - raw.length);
  });
});

type Event = { kind: 'ask'; text: string } | { kind: 'answer'; text: string; by: string } | { kind: 'resume' } | { kind: 'cancel'; by: string } | { kind: 'verify'; evidence: string };

const eventArbitrary: fc.Arbitrary<Event> = fc.oneof(
  fc.record({ kind: fc.constant('ask' as const), text: fc.string({ maxLength: 3_000, unit: 'binary' }) }),
  fc.record({ kind: fc.constant('answer' as const), text: fc.string({ minLength: 1, maxLength: 3_000, unit: 'binary' }), by: fc.constantFrom('token a', 'session b', 'link 42') }),
  fc.record({ kind: fc.constant('resume' as const) }),
  fc.record({ kind: fc.constant('cancel' as const), by: fc.constantFrom('token a', 'token b/c') }),
  fc.record({ kind: fc.constant('verify' as const), evidence: fc.string({ maxLength: 12_000 }) }),
);

describe('property: any sequence of events', () => {
  it('keeps the history in order and within its bounds, and the compacted record holds it byte for byte', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(eventArbitrary, { minLength: 1, maxLength: 60 }), async (events) => {
        const id = `p${++run}`;
        const ref = await start(id);
        let asked = 0;
        for (const event of events) {
          if (event.kind === 'ask') await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: `T-${id}`, statusMessage: question(event.text, `q${++asked}`) });
          else if (event.kind === 'answer') await journal.recordReply(ref, `r${clock}`, { parts: [{ text: event.text }] }, event.by).catch(() => undefined);
          else if (event.kind === 'resume') await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: `T-${id}`, statusTimestamp: new Date(clock).toISOString() });
          else if (event.kind === 'cancel') await journal.updateWorkflow(id, { cancelRequested: true }, undefined, { kind: 'cancel', at: 0, by: event.by });
          else await (redis() as Redis).hdel(`${prefix}:{wf:${id}}:d:main.1`, 'effect').then(() => journal.recordEffect(ref, 'unknown', event.evidence));
        }
        const raw = await rawHistory(id);
        expect(raw.length).toBeLessThanOrEqual(HISTORY_LIMITS.entries);
        expect(raw.reduce((sum, entry) => sum + Buffer.byteLength(entry), 0)).toBeLessThanOrEqual(HISTORY_LIMITS.bytes);
        for (const entry of raw) expect(Buffer.byteLength(entry)).toBeLessThanOrEqual(HISTORY_LIMITS.entryBytes);
        const live = (await journal.getWorkflowSnapshot(id))!.history;
        expect(live.entries.length).toBe(raw.length);
        const times = live.entries.map((entry) => entry.at);
        expect(times).toEqual([...times].sort((a, b) => a - b));
        // Finish: the row settles, the workflow is compacted; the record holds the list's texts as they were.
        await journal.applyStatus(ref, { mode: 'outcome', state: 'CANCELED', taskId: `T-${id}` });
        await journal.updateWorkflow(id, { state: 'CANCELED' });
        expect(await journal.isCompacted(id)).toBe(true);
        expect(await rawHistory(id)).toEqual([]);
        const record = (await (redis() as Redis).get(`${prefix}:{wf:${id}}:done`))!;
        if (raw.length > 0) expect(record.endsWith(`,"history":[${raw.join(',')}]}`)).toBe(true);
        const compacted = (await journal.getWorkflowSnapshot(id))!.history;
        expect(JSON.stringify(compacted)).toBe(JSON.stringify(live));
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
