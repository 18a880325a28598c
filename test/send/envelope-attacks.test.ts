/**
 * Attack: a JSON-RPC answer is read by its envelope, not by the HTTP framing around it (docs/a2a-edge.md
 * "Ownership"). Inputs near the envelope's edges on SendMessage: a 5xx (with and without Retry-After) whose body is
 * our success envelope, a batch (array) answer to our single request, duplicated keys, an id of another request, a
 * 429. For each, delivery, ownership and effect must be decided right: an answer proven ours
 * is not discarded, one not proven ours never adopted, a step that may have happened never sent again. Real
 * redis-server, real fleet, a scripted raw JSON-RPC agent (exact bytes). The agent lists no tasks (-32601 on
 * ListTasks), so an answer thrown away cannot be recovered by the search: it ends with a person.
 */
import { describe, expect, it } from 'vitest';
import { expectCompletedWith, finished, useFieldCases } from '../harness/field-cases.ts';
import { task, type ScriptedAnswer } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** The COMPLETED task holding our message: proven ours by its content. */
const oursCompleted = (params: { message: { messageId: string; contextId?: string } }) =>
  task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message as never], artifacts: { a1: 'booked' } });

const raw = (status: number, body: unknown, headers: Record<string, string> = {}): ScriptedAnswer => ({
  http: { status, body: typeof body === 'string' ? body : JSON.stringify(body), headers },
});

describe('attack: our success envelope inside an HTTP error status or a batch', () => {
  const variants: [string, (params: any, id: unknown) => ScriptedAnswer][] = [
    ['HTTP 500 whose body is our success envelope', (params, id) => raw(500, { jsonrpc: '2.0', id, result: { task: oursCompleted(params) } })],
    ['HTTP 503 with Retry-After: 1 whose body is our success envelope', (params, id) => raw(503, { jsonrpc: '2.0', id, result: { task: oursCompleted(params) } }, { 'retry-after': '1' })],
    ['HTTP 502 whose body is our success envelope', (params, id) => raw(502, { jsonrpc: '2.0', id, result: { task: oursCompleted(params) } })],
    ['a batch (array) holding our one success envelope', (params, id) => raw(200, [{ jsonrpc: '2.0', id, result: { task: oursCompleted(params) } }])],
    ['HTTP 200 text/event-stream whose first event is our success envelope', (params, id) => raw(200, `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { task: oursCompleted(params) } })}\n\n`, { 'content-type': 'text/event-stream' })],
    [
      'a batch holding another request\'s error and our success envelope',
      (params, id) => raw(200, [{ jsonrpc: '2.0', id: 'not-yours', error: { code: -32600, message: 'invalid' } }, { jsonrpc: '2.0', id, result: { task: oursCompleted(params) } }]),
    ],
  ];
  for (const [name, answer] of variants) {
    it(`SendMessage answered with ${name}: COMPLETED with the artifact, one SendMessage`, async () => {
      const { producer, agent, id } = await h.setUpAndDelegate(() => ({ SendMessage: (params, call) => answer(params, call.id) }));
      await expectCompletedWith(producer, id, 'T1', 'booked');
      expect(agent.count('SendMessage')).toBe(1);
    }, 45_000);
  }
});

describe('attack: a streaming send answered with a whole JSON answer (the streaming method served as the plain one)', () => {
  for (const status of [200, 503]) {
    it(`SendStreamingMessage answered HTTP ${status} application/json with our success envelope: COMPLETED with the artifact, one send`, async () => {
      const { producer, agent, id } = await h.setUpAndDelegate(
        () => ({ SendStreamingMessage: (params, call) => raw(status, { jsonrpc: '2.0', id: call.id, result: { task: oursCompleted(params) } }) }),
        { streamingSends: true },
      );
      await expectCompletedWith(producer, id, 'T1', 'booked');
      expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
    }, 45_000);
  }
});

describe('attack: answers not proven ours, or proving nothing, are never adopted nor re-sent', () => {
  const variants: [string, (params: any, id: unknown) => ScriptedAnswer][] = [
    ['HTTP 500 whose body is another request\'s success envelope', (params, _id) => raw(500, { jsonrpc: '2.0', id: 'someone-else', result: { task: task('T9', 'COMPLETED', { contextId: 'other' }) } })],
    ['a batch of two envelopes both carrying our id', (params, id) => raw(200, [{ jsonrpc: '2.0', id, result: { task: oursCompleted(params) } }, { jsonrpc: '2.0', id, result: { task: task('T9', 'COMPLETED', {}) } }])],
    ['an empty batch', () => raw(200, [])],
    ['duplicated "id" keys, another request\'s id last', (params, id) => raw(200, `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"id":"someone-else","result":${JSON.stringify({ task: task('T9', 'COMPLETED', { contextId: 'other' }) })}}`)],
    ['HTTP 429 without Retry-After and a plain body', () => raw(429, 'slow down', { 'content-type': 'text/plain' })],
  ];
  for (const [name, answer] of variants) {
    it(`SendMessage answered with ${name}: not COMPLETED from it, one SendMessage`, async () => {
      const { producer, agent, id } = await h.setUpAndDelegate(() => ({ SendMessage: (params, call) => answer(params, call.id) }));
      const record = await finished(producer, id, 30_000);
      expect(record.state).not.toBe('COMPLETED');
      expect(agent.count('SendMessage')).toBe(1);
    }, 45_000);
  }
});
