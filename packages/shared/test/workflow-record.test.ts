/** The typed workflow record: one shape for attention, typed approvals, older rows still readable. No Redis. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ATTENTION_CODES, parseWorkflowHash, type Attention } from '../src/index.ts';
import { encodeWorkflowPatch } from '../src/journal/workflow-record.ts';

const definition = JSON.stringify({ workflowId: 'trip', steps: [{ name: 'main', agent: 'https://a.example', message: { text: 'hi' } }], maxAttemptsPerStep: 1 });
const row = (fields: Record<string, string> = {}) => ({ workflowId: 'trip', state: 'RUNNING', definition, version: '3', createdAt: '10', updatedAt: '20', ...fields });

describe('workflow record', () => {
  it('parses the fixed fields into types (flags as booleans, lists as arrays, definition validated)', () => {
    const record = parseWorkflowHash(row({ cancelRequested: '1', stopping: '["a failed"]', failure: '["x"]' }));
    expect(record).toMatchObject({ workflowId: 'trip', state: 'RUNNING', version: 3, createdAt: 10, updatedAt: 20, cancelRequested: true, stopping: ['a failed'], failure: ['x'], retryApproved: [] });
    expect(record.definition.steps[0]!.name).toBe('main');
    expect(record.definitionText).toBe(definition);
    expect(parseWorkflowHash(row()).cancelRequested).toBe(false);
  });

  it('refuses a corrupt row (unknown state, invalid definition) instead of guessing', () => {
    expect(() => parseWorkflowHash(row({ state: 'SOMETHING' }))).toThrow();
    expect(() => parseWorkflowHash(row({ definition: '{"steps":[]}' }))).toThrow();
  });

  it('reads older rows: prose attention, {reason} JSON attention and dynamic retry:<id> approvals', () => {
    expect(parseWorkflowHash(row({ attention: 'main.1 is AMBIGUOUS' })).attention).toEqual({ code: 'UNSPECIFIED', message: 'main.1 is AMBIGUOUS' });
    const legacy = parseWorkflowHash(row({ attention: JSON.stringify({ reason: 'undo failed', delegationId: 'undo.main.1', state: 'FAILED' }) }));
    expect(legacy.attention).toMatchObject({ code: 'COMPENSATION_FAILED', message: 'undo failed', delegationId: 'undo.main.1', evidence: { state: 'FAILED' } });
    expect(parseWorkflowHash(row({ 'retry:main.1': '1', 'retry:main.2': '', retryApproved: '["main.3"]' })).retryApproved.sort()).toEqual(['main.1', 'main.3']);
  });

  it('a patch round-trips through the hash encoding (property)', () => {
    const attention = fc.record({ code: fc.constantFrom(...ATTENTION_CODES), message: fc.string(), delegationId: fc.option(fc.string(), { nil: undefined }) });
    fc.assert(
      fc.property(fc.boolean(), fc.array(fc.string()), fc.array(fc.string()), attention, fc.array(fc.string()), (cancel, stopping, failure, note, approved) => {
        const fields = encodeWorkflowPatch({ cancelRequested: cancel, stopping, failure, attention: note as Attention, retryApproved: approved });
        const record = parseWorkflowHash(row(fields));
        expect(record.cancelRequested).toBe(cancel);
        expect(record.stopping).toEqual(stopping);
        expect(record.failure).toEqual(failure);
        expect(record.attention).toEqual(JSON.parse(JSON.stringify(note)));
        expect(record.retryApproved).toEqual(approved);
      }),
    );
  });

  it('clearing attention writes an empty field, which reads as none', () => {
    expect(encodeWorkflowPatch({ attention: null })).toEqual({ attention: '' });
    expect(parseWorkflowHash(row({ attention: '' })).attention).toBeUndefined();
  });
});
