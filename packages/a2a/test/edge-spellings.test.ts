/**
 * Issue 12, kind 3 "spellings" (field case R26): every spelling agents send for a task state or a role
 * is read as the 1.0 value, on both versions and both bindings, in answers, stream events, GetTask,
 * ListTasks and push bodies; a value no spelling explains is a typed, permanent protocol error.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { drainStream } from '../src/stream.ts';
import { UnknownWireValueError } from '../src/errors.ts';
import { JsonRpcTransport } from '../src/jsonrpc.ts';
import { normalizePushBody } from '../src/push.ts';
import { RestTransport } from '../src/rest.ts';
import { TASK_STATES, TaskResultSchema, StreamResponseSchema, type TaskState } from '../src/schema.ts';
import type { StreamEvent } from '../src/transport.ts';
import { roleFromWire, taskStateFromWire } from '../src/spelling.ts';
import { JsonRpcV03Transport } from '../src/v03/jsonrpc.ts';
import { RestV03Transport } from '../src/v03/rest.ts';
import { ProtoTaskSchema } from '../src/v03/rest-wire.ts';
import { EventV03Schema, eventFromV03, taskFromV03, TaskV03Schema } from '../src/v03/wire.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const idOf = (body: string): unknown => (JSON.parse(body) as { id: unknown }).id;

describe('taskStateFromWire / roleFromWire', () => {
  it.each([
    ['TASK_STATE_COMPLETED', 'TASK_STATE_COMPLETED'],
    ['completed', 'TASK_STATE_COMPLETED'],
    ['input-required', 'TASK_STATE_INPUT_REQUIRED'],
    ['input_required', 'TASK_STATE_INPUT_REQUIRED'],
    ['INPUT_REQUIRED', 'TASK_STATE_INPUT_REQUIRED'],
    ['InputRequired', 'TASK_STATE_INPUT_REQUIRED'],
    ['auth-required', 'TASK_STATE_AUTH_REQUIRED'],
    ['TASK_STATE_CANCELLED', 'TASK_STATE_CANCELED'],
    ['cancelled', 'TASK_STATE_CANCELED'],
    ['unknown', 'TASK_STATE_UNSPECIFIED'],
    [3, 'TASK_STATE_COMPLETED'],
    [6, 'TASK_STATE_INPUT_REQUIRED'],
    [' Working ', 'TASK_STATE_WORKING'],
  ])('%j -> %s', (wire, expected) => {
    expect(taskStateFromWire(wire)).toBe(expected);
  });

  it('unknown values are undefined, never a guess', () => {
    for (const wire of ['done', 'finished', 'TASK_STATE_', '', 9, -1, 2.5, null, {}, 'x'.repeat(100)]) expect(taskStateFromWire(wire)).toBeUndefined();
  });

  it('roles: user, agent, ROLE_AGENT, Agent, 1', () => {
    expect(roleFromWire('user')).toBe('ROLE_USER');
    expect(roleFromWire('ROLE_AGENT')).toBe('ROLE_AGENT');
    expect(roleFromWire('Agent')).toBe('ROLE_AGENT');
    expect(roleFromWire(1)).toBe('ROLE_USER');
    expect(roleFromWire('robot')).toBeUndefined();
  });
});

/** A random spelling of `state`: prefix or not, any case per letter, any separator. */
const spelling = (state: TaskState): fc.Arbitrary<string> => {
  const words = state.replace(/^TASK_STATE_/, '').split('_');
  return fc
    .record({
      prefix: fc.boolean(),
      separator: fc.constantFrom('_', '-', ' ', ''),
      cases: fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
    })
    .map(({ prefix, separator, cases }) => {
      const all = (prefix ? ['TASK', 'STATE', ...words] : words).join(separator);
      return [...all].map((char, index) => (cases[index % cases.length] ? char.toUpperCase() : char.toLowerCase())).join('');
    });
};
const anyState = fc.constantFrom(...TASK_STATES);

describe('property: every spelling of every state reads the same, in every schema', () => {
  it('1.0 GetTask, 1.0 stream event, 0.3 task, 0.3 event, 0.3 REST proto', () => {
    fc.assert(
      fc.property(anyState.chain((state) => fc.tuple(fc.constant(state), spelling(state))), ([state, wire]) => {
        expect(taskStateFromWire(wire)).toBe(state);
        const task = { id: 'T1', contextId: 'C1', status: { state: wire } };
        expect(TaskResultSchema.parse(task).status.state).toBe(state);
        expect(StreamResponseSchema.parse({ statusUpdate: { taskId: 'T1', status: { state: wire } } })).toEqual({ statusUpdate: { taskId: 'T1', status: { state } } });
        expect(taskFromV03(TaskV03Schema.parse({ ...task, kind: 'task' })).status.state).toBe(state);
        expect(eventFromV03(EventV03Schema.parse({ kind: 'status-update', taskId: 'T1', status: { state: wire } }))).toEqual({ statusUpdate: { taskId: 'T1', status: { state } } });
        expect(ProtoTaskSchema.parse(task).status.state).toBe(state);
      }),
      { numRuns: 300 },
    );
  });

  it('any string is either a known state or refused with a typed error (never a throw of another kind)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (wire) => {
        const known = taskStateFromWire(wire);
        let caught: unknown;
        try {
          normalizePushBody({ task: { id: 'T1', status: { state: wire } } });
        } catch (error) {
          caught = error;
        }
        if (known === undefined) expect(caught).toBeInstanceOf(UnknownWireValueError);
        else expect(caught).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });
});

describe('R26: a 1.0 agent spells the state the legacy way', () => {
  it('JSON-RPC 1.0: send TASK_STATE_SUBMITTED, stream WORKING then "completed", GetTask bare "completed" with a1 = "done"', async () => {
    server = await startRawServer((request, response) => {
      const { method } = JSON.parse(request.body) as { method: string };
      const id = idOf(request.body);
      const frame = (result: unknown) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`;
      if (method === 'SubscribeToTask') {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(frame({ task: { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } } }));
        response.end(frame({ statusUpdate: { taskId: 'T1', status: { state: 'completed', timestamp: '2026-01-01T00:00:02Z' } } }));
        return;
      }
      const result = method === 'SendMessage'
        ? { task: { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_SUBMITTED' } } }
        : { id: 'T1', status: { state: 'completed' }, artifacts: [{ artifactId: 'a1', parts: [{ text: 'done' }] }] };
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result }));
    });
    const transport = new JsonRpcTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    const sent = await transport.sendMessage({ message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'go' }] } });
    expect(sent).toEqual({ task: { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_SUBMITTED' } } });
    const events: StreamEvent[] = [];
    const end = await drainStream(transport.subscribeToTask({ id: 'T1' }), (event) => void events.push(event));
    expect(end).toMatchObject({ kind: 'terminal', lastState: 'TASK_STATE_COMPLETED', eventCount: 2 });
    const task = await transport.getTask({ id: 'T1' });
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts).toEqual([{ artifactId: 'a1', parts: [{ text: 'done' }] }]);
  });

  it('HTTP+JSON 1.0 and 0.3, JSON-RPC 0.3: GetTask and ListTasks in mixed spellings; an unknown state is UnknownWireValueError (permanent, received)', async () => {
    let state: unknown = 'input-required';
    server = await startRawServer((request, response) => {
      const task = { id: 'T1', contextId: 'C1', status: { state, message: { messageId: 'q', role: 'agent', parts: [{ text: '?' }] } } };
      const body = request.url.split('?')[0] === '/tasks' ? { tasks: [task, { ...task, id: 'T2', status: { state: 'TASK_STATE_WORKING' } }] }
        : request.method === 'POST' && request.url === '/' ? { jsonrpc: '2.0', id: idOf(request.body), result: task }
        : task;
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    const rest = new RestTransport({ url: server.url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' });
    const restV03 = new RestV03Transport({ url: server.url, protocolBinding: 'HTTP+JSON', protocolVersion: '0.3' });
    const rpcV03 = new JsonRpcV03Transport({ url: `${server.url}/`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' });
    for (const transport of [rest, rpcV03]) {
      const task = await transport.getTask({ id: 'T1' });
      expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
      expect(task.status.message?.role).toBe('ROLE_AGENT');
    }
    expect((await rest.listTasks({})).tasks.map((task) => task.status.state)).toEqual(['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_WORKING']);
    state = 'TASK_STATE_CANCELLED';
    for (const transport of [rest, restV03, rpcV03]) expect((await transport.getTask({ id: 'T1' })).status.state).toBe('TASK_STATE_CANCELED');
    state = 'half-done';
    for (const transport of [rest, restV03, rpcV03]) {
      const error = await transport.getTask({ id: 'T1' }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(UnknownWireValueError);
      expect(error).toMatchObject({ code: 'UNKNOWN_WIRE_VALUE', retryable: false, delivery: 'received' });
    }
  });

  it('push bodies: 1.0 wrapper with a 0.3 spelling, 0.3 event with a 1.0 spelling, a gRPC number', () => {
    expect(normalizePushBody({ statusUpdate: { taskId: 'T1', status: { state: 'completed' } } })).toEqual({ statusUpdate: { taskId: 'T1', status: { state: 'TASK_STATE_COMPLETED' } } });
    expect(normalizePushBody({ kind: 'status-update', taskId: 'T1', status: { state: 'TASK_STATE_FAILED' }, final: true })).toEqual({ statusUpdate: { taskId: 'T1', status: { state: 'TASK_STATE_FAILED' } } });
    expect(normalizePushBody({ task: { id: 'T1', status: { state: 7 } } })).toEqual({ task: { id: 'T1', status: { state: 'TASK_STATE_REJECTED' } } });
    expect(() => normalizePushBody({ statusUpdate: { taskId: 'T1', status: { state: 'FINISHED' } } })).toThrow(UnknownWireValueError);
  });
});
