/** parseDefinitionText: the schema's parse of a journaled definition, kept per text. No Redis. */
import { describe, expect, it } from 'vitest';
import { WorkflowDefinitionSchema, parseDefinitionText } from '../src/workflow.ts';

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
