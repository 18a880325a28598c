/** parseDefinitionText: the schema's parse of a journaled definition, kept per text. No Redis. */
import { deepStrictEqual } from 'node:assert/strict';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WorkflowDefinitionSchema, keepParsedDefinition, parseDefinitionText } from '../src/workflow.ts';

const text = (name: string) => JSON.stringify({ workflowId: `wf-${name}`, steps: [{ name, agent: 'https://a.example', message: { text: 'hi' }, verifier: { name: 'v' } }] });

describe('parseDefinitionText', () => {
  it('returns the schema parse (defaults applied), the same object for the same text, another for another text', () => {
    const first = parseDefinitionText(text('a'));
    expect(first).toStrictEqual(WorkflowDefinitionSchema.parse(JSON.parse(text('a'))));
    expect(parseDefinitionText(text('a'))).toBe(first);
    expect(parseDefinitionText(text('b')).steps[0]!.name).toBe('b');
  });

  it('throws the schema error on an invalid definition, every time (a failure is not kept)', () => {
    const invalid = JSON.stringify({ workflowId: 'wf', steps: [] });
    expect(() => parseDefinitionText(invalid)).toThrow();
    expect(() => parseDefinitionText(invalid)).toThrow();
    expect(() => parseDefinitionText('{')).toThrow(SyntaxError);
  });
});

/** Definitions as callers write them: optional members present or absent, defaults left to the schema. */
const definitionInput = fc.record(
  {
    workflowId: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
    steps: fc.uniqueArray(
      fc.record(
        {
          name: fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/),
          agent: fc.constantFrom('https://a.example', 'http://127.0.0.1:3000/.well-known/agent-card.json'),
          message: fc.oneof(
            fc.record({ text: fc.string({ minLength: 1, maxLength: 20 }), metadata: fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { noNullPrototype: true }) }, { requiredKeys: ['text'] }),
            fc.record({ parts: fc.array(fc.record({ text: fc.string({ maxLength: 10 }) }), { minLength: 1, maxLength: 2 }) }),
          ),
          push: fc.boolean(),
          verifier: fc.record({ name: fc.constant('v'), params: fc.dictionary(fc.string({ maxLength: 5 }), fc.integer()) }, { requiredKeys: ['name'] }),
          compensation: fc.record({ handler: fc.constant('undo'), params: fc.dictionary(fc.string({ maxLength: 5 }), fc.boolean()) }, { requiredKeys: ['handler'] }),
          attemptDeadlineMs: fc.integer({ min: 1, max: 1e9 }),
          question: fc.constant({ remindEveryMs: 1_000 }),
        },
        { requiredKeys: ['name', 'agent', 'message'] },
      ),
      { minLength: 1, maxLength: 3, selector: (step) => step.name },
    ),
    maxAttemptsPerStep: fc.integer({ min: 1, max: 20 }),
    metadata: fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { noNullPrototype: true }),
    priority: fc.integer({ min: 1, max: 10 }),
  },
  { requiredKeys: ['workflowId', 'steps'] },
);

describe('keepParsedDefinition', () => {
  it('property: what is handed out for a kept text equals the schema parse of that text (keeping it is the same as parsing)', () => {
    fc.assert(
      fc.property(definitionInput, (input) => {
        const parsed = WorkflowDefinitionSchema.parse(input);
        const journaled = JSON.stringify(parsed);
        keepParsedDefinition(journaled, parsed);
        // A metadata value -0 (written "0") or an undefined member is not kept: the text is parsed instead.
        // node's deepStrictEqual: vitest's toStrictEqual compares `constructor` properties by identity, so equal objects with an own
        // member named `constructor` (fast-check generates such keys) would differ.
        deepStrictEqual(parseDefinitionText(journaled), WorkflowDefinitionSchema.parse(JSON.parse(journaled)));
      }),
      { numRuns: 200 },
    );
  });

  it('does not keep a definition holding -0 (its text says 0): the text is parsed', () => {
    const definition = WorkflowDefinitionSchema.parse({ workflowId: 'negative-zero', steps: [{ name: 'a', agent: 'https://a.example', message: { text: 'x', metadata: { n: -0 } } }] });
    const journaled = JSON.stringify(definition);
    keepParsedDefinition(journaled, definition);
    expect(parseDefinitionText(journaled)).not.toBe(definition);
    expect(Object.is(parseDefinitionText(journaled).steps[0]!.message.metadata!.n, 0)).toBe(true);
  });

  it('hands the kept object out for its text without parsing', () => {
    const definition = WorkflowDefinitionSchema.parse(JSON.parse(text('kept')));
    const journaled = JSON.stringify(definition);
    keepParsedDefinition(journaled, definition);
    expect(parseDefinitionText(journaled)).toBe(definition);
  });

  it('does not keep a definition with an undefined member (its text leaves it out): the text is parsed', () => {
    const definition = { ...WorkflowDefinitionSchema.parse(JSON.parse(text('holes'))), metadata: undefined };
    const journaled = JSON.stringify(definition);
    keepParsedDefinition(journaled, definition);
    const read = parseDefinitionText(journaled);
    expect(read).not.toBe(definition);
    expect('metadata' in read).toBe(false);
  });
});
