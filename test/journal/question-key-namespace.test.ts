/**
 * The kind "a key the journal makes is one an agent can name": a question asked again under the key our delivered
 * answer answered is journaled under a key made here (`<key>#re<n>`, applyStatus-5.lua), as are questions without a
 * status message id (`#t<ms>`) or without any key (`#seq<n>`). Those keys shared the agent's namespace: (a) an agent's
 * own key ending in `#re1`, asked again after our answer, was read as `<key>` asked again (the suffix stripped) and
 * dropped as stale; (b) an agent that asked `x`, then `x#re1`, then `x` again got `x#re1` made for the third asking:
 * the agent's own answered key. Either way the row parked on a question nobody could answer, the workflow waiting for
 * ever. Now no agent's key holds a '#' or begins with `sha256:` (questionKeyOf hashes such an id), every key made here
 * does, and a key made here names no key the row knows; rows journaled in the old form are read in both forms.
 * Real redis-server, the journal's scripts, the producer's open questions.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { asksQuestion, questionKeyOf, type DelegationRef, type Journal } from '@durable-a2a/shared';
import { eventually } from '../harness/fleet.ts';
import { runningIntent } from '../harness/journal-rows.ts';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const PREFIX = 'question-keys';
const CARD = 'http://agent.example/.well-known/agent-card.json';
const BASE = Date.UTC(2026, 0, 1);
let producer: Producer;
let journal: Journal;
let counter = 0;

beforeAll(async () => {
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: PREFIX });
  journal = producer.journal;
  await eventually(() => journal.getWorkflow('none').then(() => true, () => false), 'the producer connected', 10_000);
});
afterAll(async () => {
  await producer?.close();
});

const newDelegation = () => runningIntent(journal, `qk-${++counter}`, CARD);
const stamp = (seconds: number) => new Date(BASE + seconds * 1_000).toISOString();

/** The agent asks under status message id `id` (undefined: a status without a message) with `text`, at `at` seconds. */
async function asks(ref: DelegationRef, id: string | undefined, text: string, at: number | undefined, snapshot = false): Promise<void> {
  await journal.applyStatus(ref, {
    mode: snapshot ? 'snapshot' : 'event',
    state: 'INPUT_REQUIRED',
    taskId: `T-${ref.workflowId}`,
    ...(at === undefined ? {} : { statusTimestamp: stamp(at) }),
    ...(id === undefined ? {} : { statusMessage: { messageId: id, role: 'ROLE_AGENT' as const, parts: [{ text }] } }),
  });
}

async function works(ref: DelegationRef, at: number): Promise<void> {
  await journal.applyStatus(ref, { mode: 'event', state: 'WORKING', taskId: `T-${ref.workflowId}`, statusTimestamp: stamp(at) });
}

/** Our answer to the row's open question, journaled and delivered; false when the row has none to answer. */
async function answer(ref: DelegationRef, answerId: string): Promise<boolean> {
  const reply = await journal.recordReply(ref, answerId, { parts: [{ text: `answer ${answerId}` }] });
  if (!reply.created) return false;
  expect(await journal.markReply(ref, 1, answerId, 'sending', '', { token: `tok-${answerId}`, leaseMs: 60_000 })).toBe(true);
  expect(await journal.markReply(ref, 1, answerId, 'sent', '', { token: `tok-${answerId}` })).toBe(true);
  return true;
}

/** The texts of the row's open questions as the producer shows them. */
const openTexts = async (ref: DelegationRef) => (await producer.questions(ref.workflowId)).map((question) => JSON.stringify(question));

/** The row shows exactly one open question, with `text`. */
async function expectOpen(ref: DelegationRef, text: string): Promise<void> {
  const open = await openTexts(ref);
  expect(open).toHaveLength(1);
  expect(open[0]).toContain(text);
}

/** The agent asks; the question is open with `text`; our answer `answerId` to it is delivered. */
async function askedAndAnswered(ref: DelegationRef, id: string, text: string, at: number, answerId: string): Promise<void> {
  await asks(ref, id, text, at);
  await expectOpen(ref, text);
  expect(await answer(ref, answerId)).toBe(true);
}

describe('question keys made by the journal are out of the agent keys\' reach', () => {
  it('case (a): the agent\'s own key `k#re1`, asked again after our answer at a later stamp, is an open question (was: stale, nothing to answer)', async () => {
    const ref = await newDelegation();
    await askedAndAnswered(ref, 'k#re1', 'which seat?', 0, 'r1');
    await askedAndAnswered(ref, 'k#re1', 'that seat is taken: which seat?', 2, 'r2');
    expect(await openTexts(ref)).toEqual([]);
  });

  it('case (b): `x`, then a new question `x#re1`, then `x` again: the third asking is open and takes its own answer (was: journaled as `x#re1`, already answered)', async () => {
    const ref = await newDelegation();
    await askedAndAnswered(ref, 'x', 'how many?', 0, 'r1');
    await askedAndAnswered(ref, 'x#re1', 'which day?', 1, 'r2');
    await askedAndAnswered(ref, 'x', 'how many, again?', 2, 'r3');
    // Replays of every asking (their own stamps) open nothing.
    await asks(ref, 'x', 'how many?', 0, true);
    await asks(ref, 'x#re1', 'which day?', 1, true);
    await asks(ref, 'x', 'how many, again?', 2, true);
    expect(await openTexts(ref)).toEqual([]);
  });

  it('case (c): asked again at the stamp of the WORKING that followed our answer: a new question; the answered asking replayed at its own stamp is not', async () => {
    const ref = await newDelegation();
    await asks(ref, 'q', 'which city?', 0);
    expect(await answer(ref, 'r1')).toBe(true);
    await works(ref, 1);
    await asks(ref, 'q', 'which city?', 0, true);
    expect(await openTexts(ref)).toEqual([]);
    await asks(ref, 'q', 'that city is closed: which city?', 1);
    await expectOpen(ref, 'that city is closed');
    expect(await answer(ref, 'r2')).toBe(true);
  });

  it('case: a question without a message id, then the agent\'s id equal to our timestamp key: two questions, each answered', async () => {
    const ref = await newDelegation();
    await asks(ref, undefined, '', 0);
    const first = (await journal.getDelegation(ref))!;
    expect(first.questionKey).toBe(`#t${BASE}`);
    expect(await answer(ref, 'r1')).toBe(true);
    await asks(ref, String(BASE), 'which day?', 0);
    await expectOpen(ref, 'which day?');
    expect(await answer(ref, 'r2')).toBe(true);
  });

  it('case: rows journaled in the old form (an agent key `k#re1` or a timestamp key held as it is) are read in both forms', async () => {
    for (const [id, legacy] of [['k#re1', 'k#re1'], [undefined, String(BASE)]] as const) {
      const ref = await newDelegation();
      // (A status without a message shows no text: its state is what the view shows.)
      const shows = (text: string) => (id === undefined ? '"state":"INPUT_REQUIRED"' : text);
      await asks(ref, id, 'which seat?', 0);
      // The row as the journal wrote it before keys had a namespace of their own.
      const key = `${PREFIX}:{wf:${ref.workflowId}}:d:${ref.delegationId}`;
      expect(await redis().exists(key)).toBe(1);
      await redis().hset(key, 'questionKey', legacy, 'askedKeys', id === undefined ? '' : JSON.stringify([legacy]));
      await expectOpen(ref, shows('which seat?'));
      // The same asking read again is the same question: not a new one, and our answer answers it.
      await asks(ref, id, 'which seat?', 0, true);
      expect((await journal.getDelegation(ref))!.questionKey).toBe(legacy);
      expect(await answer(ref, 'r1')).toBe(true);
      expect(await openTexts(ref)).toEqual([]);
      await asks(ref, id, 'which seat?', 0, true);
      expect(await openTexts(ref)).toEqual([]);
      // Asked again later: a new question under a key made here (a later timestamp is another key), answerable.
      await asks(ref, id, 'another seat?', 3);
      await expectOpen(ref, shows('another seat?'));
      expect((await journal.getDelegation(ref))!.questionKey).toBe(id === undefined ? `#t${BASE + 3_000}` : `${questionKeyOf({ messageId: id } as never, undefined)}#re1`);
      expect(await answer(ref, 'r2')).toBe(true);
    }
  });

  it('property: keys of any form; no agent id gives a key made by the journal (a \'#\' or `sha256:`), and a status asks the questions journaled under its key', () => {
    fc.assert(
      fc.property(agentId, fc.nat({ max: 9 }), (id, n) => {
        const message = { messageId: id, role: 'ROLE_AGENT', parts: [{ text: '?' }] } as never;
        const key = questionKeyOf(message, undefined);
        if (key !== id) expect(key).toMatch(/^sha256:[0-9a-f]{40}$/);
        expect(key.includes('#')).toBe(false);
        expect(asksQuestion(key, message, undefined)).toBe(true);
        expect(asksQuestion(`${key}#re${n + 1}`, message, undefined)).toBe(true);
        if (id !== `#seq${n + 1}`) expect(asksQuestion(`#seq${n + 1}`, message, undefined)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('property: any agent keys (ending in `#re<n>`, holding our separators and prefixes) asked, re-asked and replayed: always one open question, answerable once', async () => {
    // working: a WORKING after our answer to the asking before ('equal': at this asking's stamp, an agent clock in seconds).
    const asking = fc.record({ id: fc.oneof(fc.constantFrom('x', 'x#re1', 'x#re2'), agentId), working: fc.constantFrom('no' as const, 'before' as const, 'equal' as const), replays: fc.array(fc.nat(), { maxLength: 3 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(asking, { minLength: 1, maxLength: 6 }), async (askings) => {
        const ref = await newDelegation();
        const done: { id: string; text: string; at: number }[] = [];
        for (const [i, { id, working, replays }] of askings.entries()) {
          const at = 10 * (i + 1);
          if (working !== 'no' && i > 0) await works(ref, working === 'equal' ? at : at - 5);
          const text = `question ${i}.`;
          await asks(ref, id, text, at);
          await expectOpen(ref, text);
          // Replays of earlier askings (and of this one), at their own stamps, change nothing.
          for (const replay of replays) {
            const earlier = done[replay % (done.length + 1)] ?? { id, text, at };
            await asks(ref, earlier.id, earlier.text, earlier.at, replay % 2 === 0);
            await expectOpen(ref, text);
          }
          // Its own answer, once.
          expect(await answer(ref, `r${i}`)).toBe(true);
          expect(await openTexts(ref)).toEqual([]);
          await asks(ref, id, text, at, true);
          expect(await openTexts(ref)).toEqual([]);
          expect((await journal.recordReply(ref, `again-${i}`, { parts: [{ text: 'again' }] })).created).toBe(false);
          done.push({ id, text, at });
        }
      }),
      {
        numRuns: 60,
        seed: Number(process.env.FAST_CHECK_SEED ?? 29),
        examples: [
          [[{ id: 'k#re1', working: 'no', replays: [] }, { id: 'k#re1', working: 'before', replays: [0] }]],
          [[{ id: 'x', working: 'no', replays: [] }, { id: 'x#re1', working: 'no', replays: [] }, { id: 'x', working: 'no', replays: [0, 1] }]],
          [[{ id: 'x', working: 'no', replays: [] }, { id: 'x', working: 'before', replays: [] }, { id: 'x#re1', working: 'no', replays: [1] }, { id: 'x', working: 'equal', replays: [] }]],
          [[{ id: 'q', working: 'no', replays: [] }, { id: 'q', working: 'equal', replays: [0] }, { id: 'r', working: 'equal', replays: [] }, { id: 'q', working: 'equal', replays: [1, 0] }]],
        ],
      },
    );
  }, 240_000);
});

/** Agent status message ids, many of them in the forms of our keys. */
const agentId = fc.oneof(
  fc.string({ minLength: 1, maxLength: 12 }),
  fc.tuple(fc.constantFrom('x', 'k', 'q', '#t', '#seq', 'sha256:', '', String(BASE)), fc.constantFrom('', '#re', '#re1', '#re2', '#seq1', '#t1', '#', '1')).map(([a, b]) => `${a}${b}` || 'x'),
  fc.constant(`sha256:${'0'.repeat(40)}`),
);
