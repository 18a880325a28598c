/**
 * review15: `namesTask` walked the body depth-first from its last member and stopped after 10,000 values, so padding
 * that comes later in the body than the task (a long `error.data` list, a trace beside it) spent the count before the
 * task was looked at: a JSON-RPC error with the agent's task in `result` was a plain refusal again (effect none: FAILED
 * and re-delegated, the work done twice), the case attack13 #2 closed. Case over HTTP 200 and 400; property over the
 * padding's size, spelling and place and the task's place, in either order.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, sendEffectOf } from '../src/errors.ts';
import { namesTask } from '../src/error-mapping.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };
/** A task of the agent's own (not proven ours). */
const theirs = { id: 'T5', contextId: 'agents-own', status: { state: 'TASK_STATE_WORKING' } };

let answer: (id: unknown) => { status: number; body: string } = () => ({ status: 200, body: '{}' });
let server: RawServer;
beforeAll(async () => {
  server = await startRawServer((request, response) => {
    let id: unknown = null;
    try {
      id = (JSON.parse(request.body) as { id?: unknown }).id ?? null;
    } catch {
      id = null;
    }
    const { status, body } = answer(id);
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
});
afterAll(() => server.close());

const send = () =>
  createTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' })
    .sendMessage({ message })
    .then((value) => ({ value }), (caught: unknown) => caught);

describe('an error answer naming a task behind padding (review15)', () => {
  it('case: -32602 with the task in result and 10,001 values in error.data, on HTTP 200 and 400: effect maybe', async () => {
    for (const status of [200, 400]) {
      answer = (id) => ({ status, body: JSON.stringify({ jsonrpc: '2.0', id, result: { task: theirs }, error: { code: -32602, message: 'refused', data: Array.from({ length: 10_001 }, () => 0) } }) });
      const error = await send();
      expect(error, String(status)).toBeInstanceOf(A2AError);
      expect(sendEffectOf(error), String(status)).toBe('maybe');
    }
  });

  it('property: over padding size, spelling and place and the task\'s place, in either order, the task is named', async () => {
    const paddings: Record<string, (index: number) => unknown> = { number: (index) => index, string: () => 'x', object: (index) => ({ frame: index }), list: () => [] };
    const taskPlaces: Record<string, (task: object) => Record<string, unknown>> = {
      result: (task) => ({ result: { task } }),
      sibling: (task) => ({ task }),
      'error.data': (task) => ({ error: { code: -32602, message: 'refused', data: { task } } }),
      details: (task) => ({ error: { code: -32602, message: 'refused', details: [{ '@type': 'type.googleapis.com/x', task }] } }),
    };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(0, 1, 9_999, 10_000, 10_001, 25_000),
        fc.constantFrom(...Object.keys(paddings)),
        fc.constantFrom('trace', 'padding'),
        fc.constantFrom(...Object.keys(taskPlaces)),
        fc.boolean(),
        fc.constantFrom(200, 400, 403),
        async (size, spelling, paddingKey, place, paddingFirst, status) => {
          const padding = { [paddingKey]: Array.from({ length: size }, (_, index) => paddings[spelling]!(index)) };
          const withTask = taskPlaces[place]!(theirs);
          const error = (withTask.error as object | undefined) ?? { code: -32602, message: 'refused' };
          const members = paddingFirst ? { ...padding, ...withTask } : { ...withTask, ...padding };
          const body = { jsonrpc: '2.0', ...members, error };
          expect(namesTask(body)).toBe(true);
          answer = (id) => ({ status, body: JSON.stringify({ ...body, id }) });
          const caught = await send();
          const what = JSON.stringify({ size, spelling, paddingKey, place, paddingFirst, status });
          expect(caught, what).toBeInstanceOf(A2AError);
          expect(sendEffectOf(caught), what).toBe('maybe');
        },
      ),
      { numRuns: 80 },
    );
  });

  it('a body deeper than the search looks is walked without error; a body naming no task stays a refusal', () => {
    let deep: unknown = { id: 'T', status: { state: 'TASK_STATE_WORKING' } };
    for (let level = 0; level < 50; level++) deep = { inner: deep };
    expect(namesTask(deep)).toBe(false);
    expect(namesTask({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'refused', data: Array.from({ length: 30_000 }, (_, index) => ({ id: String(index), status: { code: 400 } })) } })).toBe(false);
  });
});
