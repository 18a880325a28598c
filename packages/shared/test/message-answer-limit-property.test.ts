/**
 * Property (edges35, kind: an answer over a limit read as if whole): a Message answer is the step's whole result, so a
 * COMPLETED write whose result message is over `statusMessageBytes` ends AMBIGUOUS with a permanent LIMIT_EXCEEDED
 * (`statusMessageBytes`, delivery received), the excerpt kept (bounded, flagged as cut), never COMPLETED with part of
 * the result; a result that fits is untouched; a state other than COMPLETED keeps its state (the excerpt only); a
 * result that is no Message is never cut. Over message size × text kind × bound × state. The end-to-end channels
 * (a send's answer, a send stream's event) are test/saga/answer-judging-35.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message } from '@durable-a2a/a2a/pure';
import { resultWithinLimit, statusMessageCut } from '../src/journal/status-message.ts';
import type { RecordedError } from '../src/journal/record.ts';
import type { JournalState } from '../src/journal/states.ts';

const bytesOf = (text: string) => Buffer.byteLength(text, 'utf8');
const textOf = (kind: 'plain' | 'control' | 'astral', length: number): string =>
  kind === 'plain' ? 'x'.repeat(length) : kind === 'control' ? '\u0001'.repeat(length) : '😀'.repeat(Math.ceil(length / 2));
const messageOf = (text: string): Message => ({ messageId: 'm-agent', role: 'ROLE_AGENT', contextId: 'C1', parts: [{ text }] });

const STATES: JournalState[] = ['COMPLETED', 'FAILED', 'WORKING', 'INPUT_REQUIRED', 'AMBIGUOUS'];

describe('property: a Message answer over statusMessageBytes ends AMBIGUOUS LIMIT_EXCEEDED, never COMPLETED with an excerpt', () => {
  it('size × text kind × bound × state', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 110 * 1024 }), fc.constantFrom<'plain' | 'control' | 'astral'>('plain', 'control', 'astral'), fc.integer({ min: 2_048, max: 16_384 }), fc.constantFrom(...STATES), (length, kind, maxBytes, state) => {
        const message = messageOf(textOf(kind, length));
        const change: { mode: 'outcome'; state: JournalState; result: unknown; error?: RecordedError } = { mode: 'outcome', state, result: { message } };
        const bounded = resultWithinLimit(change, maxBytes);
        const fits = bytesOf(JSON.stringify(message)) <= maxBytes;
        if (fits) return void expect(bounded).toBe(change);
        const kept = (bounded.result as { message: Message }).message;
        expect(bytesOf(JSON.stringify(kept))).toBeLessThanOrEqual(maxBytes);
        expect(statusMessageCut(kept)?.bytes).toBe(bytesOf(JSON.stringify(message)));
        if (state !== 'COMPLETED') return void expect(bounded).toMatchObject({ state, result: { message: kept } });
        expect(bounded).toMatchObject({ mode: 'outcome', state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'statusMessageBytes', retryable: false, delivery: 'received' } });
        expect(bounded.error!.message).toContain(String(maxBytes));
      }),
      { numRuns: 200, examples: [[100 * 1024, 'plain', 16_384, 'COMPLETED'], [10, 'plain', 2_048, 'COMPLETED'], [20_000, 'control', 2_048, 'FAILED']] },
    );
  });

  it('a result that is no Message is never cut nor ended otherwise (a handler\'s evidence, text)', () => {
    for (const result of [{ handler: 'h', evidence: { blob: 'z'.repeat(100_000) } }, 'x'.repeat(100_000), null]) {
      const change = { mode: 'outcome' as const, state: 'COMPLETED' as JournalState, result };
      expect(resultWithinLimit(change, 2_048)).toBe(change);
    }
  });
});
