/**
 * An agent's status message is journaled within `statusMessageBytes` (docs/operations.md "Limits"; attack 24): on
 * every path that stores one (a stream event, a snapshot, a question, a finished state), the row's status message,
 * its question, the workflow's question history and every view stay bounded, and a message over the bound is kept as
 * an excerpt that says it was cut (its text and `metadata.durableA2a.cut`, with the whole message's size).
 * Real redis-server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Journal, applyTask, boundedResult, boundedStatusMessage, statusMessageCut } from '@durable-a2a/shared';
import { MessageSchema, type Message } from '@durable-a2a/a2a';
import { jsonBytesAtMost } from '../../packages/shared/src/journal/status-message.ts';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const bytesOf = (text: string) => Buffer.byteLength(text, 'utf8');

/** Text of `length` characters of one kind: plain, JSON-escaped controls (6 bytes each), or astral (surrogate pairs). */
const textOf = (kind: 'plain' | 'control' | 'astral' | 'mixed', length: number): string =>
  kind === 'plain' ? 'x'.repeat(length) : kind === 'control' ? '\u0001'.repeat(length) : kind === 'astral' ? '😀'.repeat(Math.ceil(length / 2)) : 'a\u0000é😀"\\'.repeat(Math.ceil(length / 6));

/** Any id an agent may send: any string (lone surrogates and controls included), or long runs of 3- and 6-byte characters. */
const anyId = fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 400 }), fc.constantFrom('界'.repeat(256), '\u0001'.repeat(256), '😀'.repeat(128), '"'.repeat(256), 'T1'));

const messageArbitrary = fc.record({
  kind: fc.constantFrom('plain', 'control', 'astral', 'mixed') as fc.Arbitrary<'plain' | 'control' | 'astral' | 'mixed'>,
  length: fc.integer({ min: 0, max: 60_000 }),
  // Up to the wire's bound on ids (`WIRE_ID_BYTES_MAX`, 1 KiB): a longer one is refused at the edge, never journaled.
  idLength: fc.integer({ min: 1, max: 1_024 }),
  parts: fc.integer({ min: 1, max: 4 }),
  data: fc.boolean(),
  ids: fc.option(fc.record({ messageId: fc.option(anyId, { nil: undefined }), taskId: anyId, contextId: anyId }), { nil: undefined }),
});

type Ids = { messageId?: string | undefined; taskId: string; contextId: string };
type Shape = { kind: 'plain' | 'control' | 'astral' | 'mixed'; length: number; idLength: number; parts: number; data: boolean; ids?: Ids | undefined };
const messageOf = ({ kind, length, idLength, parts, data, ids }: Shape): Message => ({
  messageId: ids?.messageId ?? 'm'.repeat(idLength),
  role: 'ROLE_AGENT',
  taskId: ids?.taskId ?? 'T1',
  contextId: ids?.contextId ?? 'C1',
  parts: [...Array.from({ length: parts }, () => ({ text: textOf(kind, Math.floor(length / parts)) })), ...(data ? [{ data: { blob: 'd'.repeat(length) } }] : [])],
  metadata: { agent: 'y'.repeat(Math.floor(length / 4)) },
});

describe('boundedStatusMessage', () => {
  it('property: any message and bound: within the bound, a valid Message, whole when it fit, else cut and flagged with its size', () => {
    fc.assert(
      fc.property(messageArbitrary, fc.integer({ min: 2_048, max: 20_000 }), (shape, maxBytes) => {
        const message = messageOf(shape);
        const bounded = boundedStatusMessage(message, maxBytes);
        const whole = bytesOf(JSON.stringify(message));
        expect(bytesOf(JSON.stringify(bounded))).toBeLessThanOrEqual(maxBytes);
        expect(MessageSchema.safeParse(bounded).success).toBe(true);
        if (whole <= maxBytes) return void expect(bounded).toBe(message);
        expect(statusMessageCut(bounded)).toMatchObject({ bytes: whole });
        expect(bounded.parts[0]!.text).toContain('message cut by durable-a2a');
        // The excerpt is the start of the text, never a lone half of a surrogate pair.
        expect(bounded.parts[0]!.text).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/u);
      }),
      {
        numRuns: 200,
        examples: [
          [{ kind: 'plain', length: 41_943, idLength: 10, parts: 1, data: false, ids: undefined }, 2_048],
          [{ kind: 'control', length: 20_000, idLength: 1_024, parts: 3, data: true, ids: undefined }, 2_048],
          [{ kind: 'astral', length: 9_000, idLength: 1, parts: 1, data: false, ids: undefined }, 4_099],
          [{ kind: 'plain', length: 0, idLength: 1, parts: 1, data: true, ids: undefined }, 2_048],
          [{ kind: 'control', length: 20_000, idLength: 1, parts: 1, data: false, ids: { messageId: '\u0001'.repeat(256), taskId: '\u0001'.repeat(256), contextId: '\u0001'.repeat(256) } }, 2_048],
          [{ kind: 'plain', length: 9_000, idLength: 1, parts: 2, data: true, ids: { messageId: '界'.repeat(256), taskId: '界'.repeat(256), contextId: '界'.repeat(256) } }, 2_048],
        ],
      },
    );
  });
});

describe('boundedStatusMessage: the cheap upper bound before the exact size', () => {
  const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), fc.string({ unit: fc.constantFrom('\u0000', '\u001f', '"', '\\', '界', '😀', 'a'), maxLength: 300 }));
  const smallMessage = fc.record({
    messageId: fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
    taskId: fc.option(anyText, { nil: undefined }),
    texts: fc.array(anyText, { minLength: 1, maxLength: 4 }),
    metadata: fc.option(fc.dictionary(anyText, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }), { nil: undefined }),
  });
  const messageOfSmall = (shape: { messageId: string; taskId: string | undefined; texts: string[]; metadata: Record<string, unknown> | undefined }): Message => ({
    messageId: shape.messageId,
    role: 'ROLE_AGENT',
    ...(shape.taskId !== undefined ? { taskId: shape.taskId } : {}),
    parts: shape.texts.map((text) => ({ text })),
    ...(shape.metadata !== undefined ? { metadata: shape.metadata } : {}),
  });

  it('property: the bound never says a value fits when its JSON does not, and the message is kept whole exactly when its JSON fits', () => {
    fc.assert(
      fc.property(smallMessage, fc.integer({ min: 2_048, max: 12_000 }), (shape, maxBytes) => {
        const message = messageOfSmall(shape);
        const exact = bytesOf(JSON.stringify(message));
        if (jsonBytesAtMost(message, maxBytes)) expect(exact).toBeLessThanOrEqual(maxBytes);
        expect(boundedStatusMessage(message, maxBytes) === message).toBe(exact <= maxBytes);
      }),
      {
        numRuns: 300,
        examples: [
          // Fits by the bound (the fast path), fits only by the exact size (6 bytes a control counted, 1 written), over.
          [{ messageId: 'm', taskId: undefined, texts: ['hello'], metadata: undefined }, 2_048],
          [{ messageId: 'm', taskId: undefined, texts: ['x'.repeat(1_900)], metadata: undefined }, 2_048],
          [{ messageId: 'm', taskId: '\u0000'.repeat(300), texts: ['\u0001'.repeat(300)], metadata: { k: [1.2345678901234567e-300, -1, true, null, 'é'] } }, 2_048],
        ],
      },
    );
  });

  it('case: plain JSON data only; anything else is measured exactly', () => {
    expect(jsonBytesAtMost({ a: [1, 'x', null, true] }, 100)).toBe(true);
    expect(jsonBytesAtMost({ toJSON: () => 'x'.repeat(10_000) }, 100)).toBe(false);
    expect(jsonBytesAtMost({ when: new Date(0) }, 100)).toBe(false);
    expect(jsonBytesAtMost('\u0000'.repeat(10), 61)).toBe(false);
    expect(jsonBytesAtMost('\u0000'.repeat(10), 62)).toBe(true);
  });
});

describe('boundedStatusMessage with long ids', () => {
  it.each([
    ['CJK (3 bytes each)', '界'],
    ['control characters (6 bytes each as JSON)', '\u0001'],
  ])('case: messageId, taskId and contextId of 256 %s at the smallest bound (2,048): the excerpt stays within it (before: 2,546 and 4,850 bytes)', (_kind, character) => {
    const id = character.repeat(256);
    const message: Message = { messageId: id, role: 'ROLE_AGENT', taskId: id, contextId: id, parts: [{ text: 'x'.repeat(10_000) }] };
    const bounded = boundedStatusMessage(message, 2_048);
    expect(bytesOf(JSON.stringify(bounded))).toBeLessThanOrEqual(2_048);
    expect(MessageSchema.safeParse(bounded).success).toBe(true);
    expect(statusMessageCut(bounded)).toMatchObject({ bytes: bytesOf(JSON.stringify(message)) });
    expect(bounded.messageId).toMatch(/^sha256:[0-9a-f]{40}$/);
  });
});

describe('boundedResult', () => {
  it('property: a Message answer\'s result is bounded as a status message is; any other result unchanged', () => {
    fc.assert(
      fc.property(messageArbitrary, fc.constantFrom('message', 'handler', 'plain'), (shape, kind) => {
        const message = messageOf(shape);
        const result = kind === 'message' ? { message } : kind === 'handler' ? { handler: 'h', evidence: { blob: 'z'.repeat(shape.length) } } : 'x'.repeat(shape.length);
        const bounded = boundedResult(result, 2_048);
        if (kind !== 'message') return void expect(bounded).toBe(result);
        expect((bounded as { message: Message }).message).toEqual(boundedStatusMessage(message, 2_048));
        expect(bytesOf(JSON.stringify(bounded))).toBeLessThanOrEqual(2_048 + 20);
      }),
      { numRuns: 100, examples: [[{ kind: 'plain', length: 60_000, idLength: 10, parts: 1, data: false, ids: undefined }, 'message'], [{ kind: 'plain', length: 10, idLength: 10, parts: 1, data: false, ids: undefined }, 'message']] },
    );
  });
});

describe('the journal keeps a status message within statusMessageBytes on every path', () => {
  const redis = useRedisClient(redisServer);
  const prefix = 'wj-smsg';
  const maxBytes = 4_096;
  let producer: Producer;
  let journal: Journal;
  beforeAll(() => {
    producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisServer().url, prefix, limits: { statusMessageBytes: maxBytes } });
    journal = new Journal(redis(), { prefix, statusMessageBytes: maxBytes });
  });
  afterAll(async () => {
    await producer?.close();
  });

  const paths = ['working event', 'working snapshot', 'question', 'completed', 'failed'] as const;
  let run = 0;

  it('property: any status message size × path: the row, its question, the history and the view bounded, a cut one flagged', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), fc.integer({ min: 0, max: 40_000 }), fc.constantFrom('plain', 'control', 'astral', 'mixed') as fc.Arbitrary<'plain' | 'control' | 'astral' | 'mixed'>, async (path, length, kind) => {
        const workflowId = `smsg-${run++}`;
        const ref = { workflowId, delegationId: 'main.1' };
        await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: `http://127.0.0.1:9/${workflowId}`, message: { text: 'go' } }] });
        const message = { messageId: `q-${run}`, role: 'ROLE_AGENT' as const, taskId: 'T1', contextId: 'C1', parts: [{ text: textOf(kind, length) }] };
        const state = path === 'question' ? 'TASK_STATE_INPUT_REQUIRED' : path === 'completed' ? 'TASK_STATE_COMPLETED' : path === 'failed' ? 'TASK_STATE_FAILED' : 'TASK_STATE_WORKING';
        await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_SUBMITTED' } }, { snapshot: true });
        await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state, message } }, { snapshot: path !== 'working event' });
        const row = await redis().hgetall(journal.keys.delegation(workflowId, 'main.1'));
        const record = (await journal.getDelegation(ref))!;
        const whole = bytesOf(JSON.stringify(message));
        // A COMPLETED task without artifacts whose status message was cut: that message is its result (overstatus35).
        const completed = whole > maxBytes ? 'AMBIGUOUS' : 'COMPLETED';
        expect(record.state).toBe(path === 'question' ? 'INPUT_REQUIRED' : path === 'completed' ? completed : path === 'failed' ? 'FAILED' : 'WORKING');
        expect(bytesOf(row.statusMessage ?? '')).toBeLessThanOrEqual(maxBytes);
        expect(bytesOf(row.question ?? '')).toBeLessThanOrEqual(maxBytes);
        expect(statusMessageCut(record.statusMessage)?.bytes).toBe(whole > maxBytes ? whole : undefined);
        if (whole <= maxBytes) expect(record.statusMessage).toEqual(message);
        const view = JSON.stringify(await producer.get(workflowId));
        // The view holds the status message, the question and its history entry at most once each, and little else.
        expect(bytesOf(view)).toBeLessThan(4 * maxBytes + 16_384);
        if (path === 'question') {
          const [question] = await producer.questions(workflowId);
          expect(bytesOf(JSON.stringify(question))).toBeLessThan(2 * maxBytes + 4_096);
          if (whole > maxBytes) expect(JSON.stringify(question)).toContain('message cut by durable-a2a');
        }
      }),
      {
        numRuns: 30,
        examples: [
          ['question', 40_000, 'mixed'],
          ['completed', 40_000, 'control'],
          ['failed', 10, 'plain'],
          ['working event', 40_000, 'astral'],
          ['working snapshot', 4_000, 'plain'],
        ],
      },
    );
  }, 120_000);
});
