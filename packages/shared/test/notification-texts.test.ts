/**
 * The kind "an event too large to ever send": an agent's words (failure reasons, an attention message, a question)
 * go into notification events, and an event over NOTIFICATION_DATA_MAX_BYTES is refused when it is built. A workflow
 * with a receiver keeps its index entry until `workflow.finished` is enqueued, so such an event was retried every
 * reconcile interval until the workflow expired, and never sent. The texts are now bounded: whatever the texts, the
 * event builds, and each text is itself or a prefix of it marked with '…'.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundedNotificationTexts, notificationEventOf } from '../src/index.ts';
import { NOTIFICATION_TEXT_BUDGET_BYTES } from '../src/notify/event.ts';

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

describe('notification texts are bounded', () => {
  it('the case: one 8 MiB failure reason (a stack trace as the status message) still makes a workflow.finished event', () => {
    const failure = boundedNotificationTexts([`main: ${'at frame (file.ts:1:1)\n'.repeat(400_000)}`]);
    expect(failure[0]!.endsWith('…')).toBe(true);
    const event = notificationEventOf({ kind: 'workflow.finished', workflowId: 'w', occasion: 'FAILED', data: { state: 'FAILED', failure } }, 0);
    expect(event.data).toMatchObject({ state: 'FAILED' });
  });

  it('property: any texts (up to 20, any characters, escapes included) fit the budget, each whole or a marked prefix', () => {
    const text = fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 30_000 }), fc.constantFrom('\u0000'.repeat(20_000), '"'.repeat(40_000), 'é'.repeat(50_000)));
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 20 }), (texts) => {
        const bounded = boundedNotificationTexts(texts);
        expect(bounded).toHaveLength(texts.length);
        expect(jsonBytes(bounded)).toBeLessThanOrEqual(NOTIFICATION_TEXT_BUDGET_BYTES + 64);
        bounded.forEach((value, index) => {
          if (value !== texts[index]) {
            expect(value.endsWith('…')).toBe(true);
            expect(texts[index]!.startsWith(value.slice(0, -1))).toBe(true);
          }
        });
        expect(() => notificationEventOf({ kind: 'workflow.finished', workflowId: 'w', occasion: 'FAILED', data: { state: 'FAILED', failure: bounded } }, 0)).not.toThrow();
      }),
      { numRuns: 200 },
    );
  });
});
