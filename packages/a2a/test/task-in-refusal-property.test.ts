/**
 * Property (attack12): a SendMessage answered in a 4xx whose body names a task is never "nothing created". The agent
 * has a task (a Task carries its own verdict), ours or not: the effect is `maybe` (`sendEffectOf`), so the step is
 * never FAILED and sent to another agent (the work done twice). Not proven ours it is not adopted either. Before, a
 * 4xx whose body was not an A2A error body was a refusal (meant for a wrong URL's page), Task or not.
 * Over bindings (JSON-RPC, HTTP+JSON 1.0 and 0.3), 4xx statuses, spellings of the task (bare, `{task}`, 0.3
 * `kind: "task"`, a JSON-RPC envelope with another id or none) and content types. Bodies naming no task keep the
 * status's verdict. Byte-exact node:http server.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, InvalidAgentResponseError, sendEffectOf } from '../src/errors.ts';
import { type RawServer, requestIdOf, startRawServer } from './helpers/raw-server.ts';

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };

let answer: { status: number; body: string; contentType: string } = { status: 200, body: '{}', contentType: 'application/json' };
let server: RawServer;
beforeAll(async () => {
  server = await startRawServer((_request, response) => {
    response.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': Buffer.byteLength(answer.body) });
    response.end(answer.body);
  });
});
afterAll(() => server.close());

type Binding = 'JSONRPC' | 'HTTP+JSON 1.0' | 'HTTP+JSON 0.3';
const transport = (binding: Binding) =>
  createTransport(binding === 'JSONRPC' ? { url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' } : { url: server.url, protocolBinding: 'HTTP+JSON', protocolVersion: binding.endsWith('0.3') ? '0.3' : '1.0' });

/** A task of the agent's own (not proven ours: another context, our message not in its history). */
const theirs = { id: 'T5', contextId: 'agents-own', status: { state: 'TASK_STATE_WORKING' } };
const spellings: Record<string, (task: object) => unknown> = {
  bare: (task) => task,
  wrapped: (task) => ({ task }),
  'v0.3 kind': (task) => ({ ...task, kind: 'task', status: { state: 'working' } }),
  'envelope, another id': (task) => ({ jsonrpc: '2.0', id: 'someone-else', result: { task } }),
  'envelope, no id': (task) => ({ jsonrpc: '2.0', id: null, result: task }),
  'beside an error body': (task) => ({ error: { code: 404, status: 'NOT_FOUND', message: 'task not found' }, task }),
};
/** Bodies that name no task: the status stays the verdict. */
const noTask: Record<string, string> = {
  html: '<html><body>Not Found</body></html>',
  empty: '{}',
  'a Message': JSON.stringify({ message: { messageId: 'why', contextId: 'c-ours', role: 'ROLE_AGENT', parts: [{ text: 'invalid request' }] } }),
  'a task id alone': JSON.stringify({ task: { id: 'T5' } }),
};
const STATUSES = [400, 401, 403, 404, 405, 409, 410, 413, 415, 422];

const outcome = (binding: Binding) => transport(binding).sendMessage({ message }).then((value) => ({ value }), (error: unknown) => error);

describe('property: a 4xx whose body names a task is never "nothing created"', () => {
  it('over bindings, statuses, spellings and content types: an A2A error with effect maybe, never the task adopted', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Binding>('JSONRPC', 'HTTP+JSON 1.0', 'HTTP+JSON 0.3'),
        fc.constantFrom(...STATUSES),
        fc.constantFrom(...Object.keys(spellings)),
        fc.constantFrom('application/json', 'application/a2a+json', 'text/plain'),
        async (binding, status, spelling, contentType) => {
          answer = { status, body: JSON.stringify(spellings[spelling]!(theirs)), contentType };
          const error = await outcome(binding);
          expect(error, JSON.stringify(error)).toBeInstanceOf(A2AError);
          expect(sendEffectOf(error)).toBe('maybe');
        },
      ),
      { numRuns: 120 },
    );
  });

  it('bodies naming no task keep the status\'s verdict: 401/403 refuse our credentials; any other status is no A2A refusal (maybe; fourohfour)', async () => {
    for (const binding of ['JSONRPC', 'HTTP+JSON 1.0', 'HTTP+JSON 0.3'] as const) {
      for (const [name, body] of Object.entries(noTask)) {
        for (const status of [400, 401, 403]) {
          answer = { status, body, contentType: name === 'html' ? 'text/html' : 'application/json' };
          const error = await outcome(binding);
          expect(error, `${binding} ${status} ${name}`).toBeInstanceOf(A2AError);
          expect(sendEffectOf(error), `${binding} ${status} ${name}`).toBe(status === 400 ? 'maybe' : 'none');
        }
      }
    }
  });

  it('property (review12): error bodies with an id and a status object that is no TaskStatus (no state) are no task: the status\'s verdict (401/403 a refusal, else maybe)', async () => {
    const errorStatus = fc.record({ code: fc.oneof(fc.integer({ min: 400, max: 499 }), fc.constantFrom('NOT_FOUND', 'INVALID_ARGUMENT')), message: fc.string({ maxLength: 20 }) }, { requiredKeys: [] });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Binding>('JSONRPC', 'HTTP+JSON 1.0', 'HTTP+JSON 0.3'),
        fc.constantFrom(...STATUSES.filter((status) => status !== 409)),
        fc.string({ minLength: 1, maxLength: 12 }),
        errorStatus,
        fc.boolean(),
        async (binding, status, id, statusObject, wrapped) => {
          const body = { id, status: statusObject };
          answer = { status, body: JSON.stringify(wrapped ? { task: body } : body), contentType: 'application/json' };
          const error = await outcome(binding);
          expect(error, JSON.stringify(answer)).toBeInstanceOf(A2AError);
          // Not read as a task (that is `InvalidAgentResponseError`, whatever the status).
          expect(error, JSON.stringify(answer)).not.toBeInstanceOf(InvalidAgentResponseError);
          expect(sendEffectOf(error), JSON.stringify(answer)).toBe(status === 401 || status === 403 ? 'none' : 'maybe');
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('property (attack13): an error answer that names a task anywhere is never "nothing created"', () => {
  /** Where the task sits beside the error: the JSON-RPC `result`, `error.data`, a sibling `task`, a google.rpc `details` entry. */
  const places: Record<string, (task: object, id: unknown, code: number) => unknown> = {
    'envelope result': (task, id, code) => ({ jsonrpc: '2.0', id, error: { code, message: 'refused' }, result: { task } }),
    'envelope error.data': (task, id, code) => ({ jsonrpc: '2.0', id, error: { code, message: 'refused', data: [{ task }] } }),
    'envelope sibling': (task, id, code) => ({ jsonrpc: '2.0', id, error: { code, message: 'refused' }, task }),
    'rest details': (task, _id, code) => ({ error: { code, status: 'INVALID_ARGUMENT', message: 'refused', details: [{ '@type': 'type.googleapis.com/x', task }] } }),
  };
  const theirs03 = { kind: 'task', id: 'T5', contextId: 'agents-own', status: { state: 'working' } };
  let echoing: (id: unknown) => { status: number; body: string } = () => ({ status: 200, body: '{}' });
  let echo: RawServer;
  beforeAll(async () => {
    echo = await startRawServer((request, response) => {
      const { status, body } = echoing(requestIdOf(request));
      response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      response.end(body);
    });
  });
  afterAll(() => echo.close());

  it('over bindings, versions, statuses (200 included), refusal codes and places: an A2A error with effect maybe', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('JSONRPC' as const, 'HTTP+JSON' as const),
        fc.constantFrom('1.0' as const, '0.3' as const),
        fc.constantFrom(200, 400, 401, 403, 404),
        fc.constantFrom(-32600, -32601, -32602, -32700, -32009, -32005, 401, 400),
        fc.constantFrom(...Object.keys(places)),
        async (protocolBinding, protocolVersion, status, code, place) => {
          // A 2xx HTTP+JSON body is a success body (no error envelope): the case is the JSON-RPC binding's.
          fc.pre(status !== 200 || protocolBinding === 'JSONRPC');
          const task = protocolVersion === '0.3' ? theirs03 : theirs;
          echoing = (id) => ({ status, body: JSON.stringify(places[place]!(task, id, code)) });
          const transport = createTransport({ url: echo.url, protocolBinding, protocolVersion });
          const error = await transport.sendMessage({ message }).then((value) => ({ value }), (caught: unknown) => caught);
          const what = JSON.stringify({ protocolBinding, protocolVersion, status, code, place });
          expect(error, what).toBeInstanceOf(A2AError);
          expect(sendEffectOf(error), what).toBe('maybe');
        },
      ),
      { numRuns: 200 },
    );
  });
});
