/**
 * `delegate` validates its input once (`DelegateInputSchema`) and builds the one-step workflow from it
 * (`delegationDefinition`) instead of parsing that again with `WorkflowDefinitionSchema`: on random valid inputs (text
 * or parts, 0.3 file parts, metadata, push, notify, question policies, priorities, idempotency keys up to 128
 * characters, tenants), the definition is the one the second parse gave (values, keys and their order: the journaled
 * text is the same bytes), and a stored id the schema refuses still throws the ProducerInputError it threw.
 */
import { deepStrictEqual } from 'node:assert/strict';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tenantWorkflowId, WorkflowDefinitionSchema } from '@durable-a2a/shared';
import { DelegateInputSchema, delegationDefinition } from '../src/calls/create.ts';
import { parseInput } from '../src/calls/context.ts';
import { ProducerInputError } from '../src/errors.ts';

type Parsed = ReturnType<typeof DelegateInputSchema.parse>;

/** The definition as `delegate` built it before: the same input, parsed by WorkflowDefinitionSchema. */
function parsedAgain(workflowId: string, parsed: Parsed) {
  const metadata = parsed.metadata ? { metadata: parsed.metadata } : {};
  const message = parsed.text !== undefined ? { text: parsed.text, ...metadata } : { parts: parsed.parts!, ...metadata };
  return parseInput(WorkflowDefinitionSchema, {
    workflowId,
    steps: [{ name: 'main', agent: parsed.agent, message, ...(parsed.push !== undefined ? { push: parsed.push } : {}), ...(parsed.unreachableForMs ? { unreachableForMs: parsed.unreachableForMs } : {}), ...(parsed.question ? { question: parsed.question } : {}) }],
    maxAttemptsPerStep: 1,
    ...(parsed.notify ? { notify: parsed.notify } : {}),
    ...(parsed.priority !== undefined ? { priority: parsed.priority } : {}),
  });
}

const url = fc.oneof(fc.constantFrom('http://agent.example/.well-known/agent-card.json', 'https://Agent.Example:8443/a/../b?x=1#f', 'http://127.0.0.1:9/'), fc.webUrl());
const metadata = fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
const part = fc.oneof(
  fc.record({ text: fc.string(), metadata }, { requiredKeys: ['text'] }),
  fc.record({ data: fc.jsonValue({ maxDepth: 2 }).filter((value) => value !== undefined) }),
  fc.record({ url: fc.webUrl(), mediaType: fc.constantFrom('text/plain', 'image/png'), filename: fc.string() }, { requiredKeys: ['url'] }),
  fc.record({ kind: fc.constant('file'), file: fc.record({ bytes: fc.base64String(), mimeType: fc.constant('application/pdf'), name: fc.string() }, { requiredKeys: ['bytes'] }) }),
);
const question = fc.oneof(
  fc.record({ expiresAfterMs: fc.integer({ min: 1, max: 1e9 }), onExpiry: fc.constantFrom('cancel', 'fail') }),
  fc.record({ expiresAfterMs: fc.integer({ min: 1, max: 1e9 }), onExpiry: fc.constant('answer'), defaultAnswer: fc.constantFrom('yes', ' no '), remindEveryMs: fc.integer({ min: 1, max: 1e6 }) }, { requiredKeys: ['expiresAfterMs', 'onExpiry', 'defaultAnswer'] }),
  fc.record({ remindEveryMs: fc.integer({ min: 1, max: 1e6 }) }),
);
const input = fc.record(
  {
    agent: url,
    body: fc.oneof(fc.record({ text: fc.string({ minLength: 1 }) }), fc.record({ parts: fc.array(part, { minLength: 1, maxLength: 3 }) })),
    idempotencyKey: fc.stringMatching(/^[A-Za-z0-9._-]{1,128}$/),
    metadata,
    push: fc.boolean(),
    notify: fc.record({ url: fc.webUrl() }),
    unreachableForMs: fc.integer({ min: 1, max: 1e9 }),
    question,
    priority: fc.integer({ min: 1, max: 10 }),
  },
  { requiredKeys: ['agent', 'body'] },
);

describe('the one-step definition of a delegation', () => {
  it('property: is what WorkflowDefinitionSchema gave for it (values, keys, order, the journaled text)', () => {
    let checked = 0;
    fc.assert(
      fc.property(input, fc.constantFrom('default', 'acme', 'a'.repeat(32)), ({ body, ...rest }, tenant) => {
        const result = DelegateInputSchema.safeParse({ ...rest, ...body });
        if (!result.success) return;
        checked++;
        const workflowId = tenantWorkflowId(tenant, result.data.idempotencyKey ?? 'k');
        const built = delegationDefinition(workflowId, result.data);
        const expected = parsedAgain(workflowId, result.data);
        // node's deepStrictEqual: vitest's toStrictEqual compares `constructor` properties by identity, so equal objects with an own
        // member named `constructor` (fast-check generates such keys) would differ.
        deepStrictEqual(built, expected);
        expect(JSON.stringify(built)).toBe(JSON.stringify(expected));
      }),
      { numRuns: 1_000 },
    );
    expect(checked).toBeGreaterThan(500);
  });

  it('a stored id the schema refuses throws the error the second parse threw', () => {
    const parsed = DelegateInputSchema.parse({ agent: 'http://agent.example', text: 'hello' });
    for (const workflowId of ['', 'no spaces allowed', 'x'.repeat(129), 'a~b~c']) {
      const error = (() => {
        try {
          parsedAgain(workflowId, parsed);
        } catch (thrown) {
          return thrown;
        }
      })();
      expect(error).toBeInstanceOf(ProducerInputError);
      expect(() => delegationDefinition(workflowId, parsed)).toThrow(error as Error);
    }
  });
});
