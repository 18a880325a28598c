/**
 * The kind "an agent's unbounded id becomes one of our keys": a question is keyed by its status message's id, and that
 * key is the occasion of `question.opened` / `question.expired`, whose ids refuse an occasion over 256 characters. An
 * agent asking with a 300-character message id got no notification ever (each re-read failed the same way). A long id
 * is now hashed; a short one is kept as it is.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { notificationEventOf, questionKeyOf } from '../src/index.ts';
import { QUESTION_KEY_MAX } from '../src/journal/status-scripts.ts';

const asked = (messageId: string) => ({ messageId, role: 'ROLE_AGENT', parts: [{ text: 'which seat?' }] }) as never;

describe('question keys are bounded', () => {
  it('the case: a 300-character message id makes a question.opened event', () => {
    const key = questionKeyOf(asked('q'.repeat(300)), undefined);
    expect(key).toMatch(/^sha256:[0-9a-f]{40}$/);
    expect(() => notificationEventOf({ kind: 'question.opened', workflowId: 'w', delegationId: 'main.1', occasion: key, data: { questionKey: key } }, 0)).not.toThrow();
  });

  it('property: any id gives a key of at most 128 characters, the same for the same id, the id itself when short', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 2_000, unit: 'binary' }), fc.string({ minLength: 1, maxLength: 2_000, unit: 'binary' }), (a, b) => {
        const key = questionKeyOf(asked(a), undefined);
        expect(key.length).toBeLessThanOrEqual(QUESTION_KEY_MAX);
        expect(questionKeyOf(asked(a), '2026-01-01T00:00:00Z')).toBe(key);
        // Kept as it is when short and in none of the forms of our keys (a '#', `sha256:`: question-key-namespace.test.ts).
        if (a.length <= QUESTION_KEY_MAX && !a.includes('#') && !a.startsWith('sha256:')) expect(key).toBe(a);
        else expect(key).toMatch(/^sha256:[0-9a-f]{40}$/);
        if (a !== b) expect(questionKeyOf(asked(b), undefined)).not.toBe(key);
      }),
      { numRuns: 300 },
    );
  });
});
