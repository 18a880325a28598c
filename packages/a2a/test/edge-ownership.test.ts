/**
 * Ownership at the transport (docs/a2a-edge.md "Ownership") (RT-ownership) and V5 "delivery": a JSON-RPC answer
 * must carry our request id (send, get, list, cancel, stream frames; 1.0 and 0.3); tasks and events
 * are checked with `taskOwnership` / `eventOwnership`; an answer that arrived is never "not sent".
 */
import { createServer } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { errorFromHttp } from '../src/error-mapping.ts';
import { deliveryOf, NetworkError, ResponseIdMismatchError, TaskNotFoundError } from '../src/errors.ts';
import { JsonRpcTransport } from '../src/jsonrpc.ts';
import { eventOwnership, historyHolds, isTaskOurs, taskOwnership, taskShownOurs } from '../src/ownership.ts';
import type { A2ATransport } from '../src/transport.ts';
import { drainStream } from '../src/stream.ts';
import { JsonRpcV03Transport } from '../src/v03/jsonrpc.ts';
import { type RawServer, sleep, startRawServer } from './helpers/raw-server.ts';

let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const message = { messageId: 'm1', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };
const task = { kind: 'task', id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } };

/** An agent that answers every call correctly except for the JSON-RPC id, which `idFor` picks. */
async function agentWithIds(idFor: (ours: unknown) => unknown): Promise<RawServer> {
  return startRawServer((request, response) => {
    const { id, method } = JSON.parse(request.body) as { id: unknown; method: string };
    const result = /stream|Streaming|Subscribe|resubscribe/.test(method) ? undefined
      : /send|SendMessage/.test(method) ? (method === 'SendMessage' ? { task } : task)
      : /ListTasks/.test(method) ? { tasks: [task] } : task;
    if (result === undefined) {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: idFor(id), result: method.includes('/') ? task : { task } })}\n\n`);
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: idFor(id), result }));
  });
}

function calls(transport: A2ATransport): Record<string, () => Promise<unknown>> {
  return {
    send: () => transport.sendMessage({ message }),
    get: () => transport.getTask({ id: 'T1' }),
    cancel: () => transport.cancelTask({ id: 'T1' }),
    ...(transport.protocolVersion === '1.0' ? { list: () => transport.listTasks({}) } : {}),
    stream: () => drainStream(transport.sendStreamingMessage({ message }), () => undefined),
    subscribe: () => drainStream(transport.subscribeToTask({ id: 'T1' }), () => undefined),
  };
}

const transports = (url: string): A2ATransport[] => [
  new JsonRpcTransport({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }),
  new JsonRpcV03Transport({ url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' }),
];

describe('JSON-RPC answers must carry our request id', () => {
  it('our id (also as a string) is accepted on every call, both versions', async () => {
    server = await agentWithIds((ours) => (typeof ours === 'number' && ours % 2 === 0 ? String(ours) : ours));
    for (const transport of transports(server.url)) for (const call of Object.values(calls(transport))) await expect(call()).resolves.toBeDefined();
  });

  it('another id -> ResponseIdMismatchError on send, get, list, cancel and every stream frame (permanent, received), whatever the content', async () => {
    server = await agentWithIds((ours) => (ours as number) + 1000);
    for (const transport of transports(server.url)) {
      for (const [name, call] of Object.entries(calls(transport))) {
        const error = await call().then(() => undefined, (caught: unknown) => caught);
        expect(error, `${transport.protocolVersion} ${name}`).toBeInstanceOf(ResponseIdMismatchError);
        expect(error).toMatchObject({ code: 'RESPONSE_ID_MISMATCH', retryable: false, delivery: 'received' });
      }
    }
  });

  it.each([
    ['no id', () => undefined],
    ['a null id on a result', () => null],
  ])('%s (A33): weak evidence, the content decides: get, cancel and subscribe frames of the task we asked about, a list of tasks are accepted; send and send-stream frames whose content proves nothing are refused', async (_name, idFor) => {
    server = await agentWithIds(idFor);
    for (const transport of transports(server.url)) {
      for (const [name, call] of Object.entries(calls(transport))) {
        const outcome = await call().then((value) => value ?? 'ok', (caught: unknown) => caught);
        if (name === 'send' || name === 'stream') expect(outcome, `${transport.protocolVersion} ${name}`).toBeInstanceOf(ResponseIdMismatchError);
        else expect(outcome, `${transport.protocolVersion} ${name}`).not.toBeInstanceOf(Error);
      }
    }
  });

  it('a null id on ListTasks: a page listing tasks in the context we asked for is accepted; an empty page, or one listing another context, is refused', async () => {
    const listing = (tasks: unknown[]) =>
      startRawServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, result: { tasks } }));
      });
    for (const [tasks, accepted] of [[[task], true], [[], false], [[{ ...task, contextId: 'C2' }], false], [[task, { ...task, id: 'T2', contextId: 'C9' }], false]] as const) {
      server = await listing([...tasks]);
      const outcome = await transports(server.url)[0]!.listTasks({ contextId: 'C1' }).then((value) => value, (caught: unknown) => caught);
      if (accepted) expect(outcome).toMatchObject({ tasks: [{ id: 'T1' }] });
      else expect(outcome, JSON.stringify(tasks)).toBeInstanceOf(ResponseIdMismatchError);
      await server.close();
      server = undefined;
    }
  });

  it('a null id on subscribe frames naming another task than the one we asked about: refused (both versions)', async () => {
    server = await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: null, result: { statusUpdate: { taskId: 'T2', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } }, kind: 'status-update', taskId: 'T2', status: { state: 'working' } } })}\n\n`);
    });
    for (const transport of transports(server.url)) {
      const outcome = await drainStream(transport.subscribeToTask({ id: 'T1' }), () => undefined).then(() => 'ok', (caught: unknown) => caught);
      expect(outcome, transport.protocolVersion).toBeInstanceOf(ResponseIdMismatchError);
    }
  });

  it('a null id on a send answer whose history holds our messageId (A33): accepted, both versions; another messageId: refused', async () => {
    const holding = (messageId: string) => ({ ...task, history: [{ kind: 'message', role: 'ROLE_USER', messageId, parts: [] }] });
    for (const messageId of ['m1', 'someone-else']) {
      server = await startRawServer((request, response) => {
        const { method } = JSON.parse(request.body) as { method: string };
        const result = method === 'SendMessage' ? { task: holding(messageId) } : { ...holding(messageId), history: [{ kind: 'message', role: 'user', messageId, parts: [] }], status: { state: 'working' } };
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, result }));
      });
      for (const transport of transports(server.url)) {
        const outcome = await transport.sendMessage({ message }).then((value) => value, (caught: unknown) => caught);
        if (messageId === 'm1') expect(outcome, `${transport.protocolVersion}`).toMatchObject({ task: { id: 'T1' } });
        else expect(outcome, `${transport.protocolVersion}`).toBeInstanceOf(ResponseIdMismatchError);
      }
      await server.close();
      server = undefined;
    }
  });

  it('a null id on a send answer in the context we sent (a Message, or a Task without history): accepted, both versions; another context, or none sent: refused', async () => {
    const answers = [
      { contextId: 'C1', result: (version: string) => (version === '1.0' ? { message: { messageId: 'r1', role: 'ROLE_AGENT', contextId: 'C1', parts: [] } } : { kind: 'message', messageId: 'r1', role: 'agent', contextId: 'C1', parts: [] }), accepted: true },
      { contextId: 'C1', result: (version: string) => (version === '1.0' ? { task: { ...task, contextId: 'C1' } } : { ...task, status: { state: 'working' } }), accepted: true },
      { contextId: 'C1', result: (version: string) => (version === '1.0' ? { message: { messageId: 'r1', role: 'ROLE_AGENT', contextId: 'C2', parts: [] } } : { kind: 'message', messageId: 'r1', role: 'agent', contextId: 'C2', parts: [] }), accepted: false },
      { contextId: undefined, result: (version: string) => (version === '1.0' ? { task } : { ...task, status: { state: 'working' } }), accepted: false },
    ];
    for (const { contextId, result, accepted } of answers) {
      server = await startRawServer((request, response) => {
        const version = JSON.parse(request.body).method === 'SendMessage' ? '1.0' : '0.3';
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, result: result(version) }));
      });
      for (const transport of transports(server.url)) {
        const outcome = await transport.sendMessage({ message: { ...message, ...(contextId ? { contextId } : {}) } }).then((value) => value, (caught: unknown) => caught);
        if (accepted) expect(outcome, `${transport.protocolVersion} ${JSON.stringify(result(transport.protocolVersion))}`).not.toBeInstanceOf(Error);
        else expect(outcome, `${transport.protocolVersion} ${JSON.stringify(result(transport.protocolVersion))}`).toBeInstanceOf(ResponseIdMismatchError);
      }
      await server.close();
      server = undefined;
    }
  });

  it('A33 on a stream: SendStreamingMessage frames with a null or missing id are ours once a frame proved the stream ours by its content; another id never (property, both versions)', async () => {
    type FrameId = 'ours' | 'null' | 'missing' | 'other';
    let story: { proves: boolean; ids: FrameId[] } = { proves: true, ids: [] };
    server = await startRawServer((request, response) => {
      const { id } = JSON.parse(request.body) as { id: number; method: string };
      const v03 = !request.body.includes('"SendStreamingMessage"');
      const history = [{ kind: 'message', role: v03 ? 'user' : 'ROLE_USER', messageId: story.proves ? 'm1' : 'someone-else', parts: [] }];
      const first = { ...task, history, ...(v03 ? { status: { state: 'working' } } : {}) };
      const update = v03 ? { kind: 'status-update', taskId: 'T1', contextId: 'C1', status: { state: 'working' }, final: false } : { statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } } };
      const frames = story.ids.map((frameId, index) => {
        const envelope: Record<string, unknown> = { jsonrpc: '2.0', result: index === 0 ? (v03 ? first : { task: first }) : update };
        if (frameId !== 'missing') envelope.id = frameId === 'ours' ? id : frameId === 'null' ? null : id + 1000;
        return `data: ${JSON.stringify(envelope)}\n\n`;
      });
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(frames.join(''));
    });
    const url = server.url;
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.array(fc.constantFrom<FrameId>('ours', 'null', 'missing', 'other'), { minLength: 1, maxLength: 5 }), async (proves, ids) => {
        story = { proves, ids };
        // Expected: frames pass while each carries our id, or no id with the stream proven (this frame's content or an earlier frame).
        let expected = 0;
        for (const [index, frameId] of ids.entries()) {
          const proven = expected > 0 || (index === 0 && proves);
          if (frameId === 'ours' || ((frameId === 'null' || frameId === 'missing') && proven)) expected++;
          else break;
        }
        for (const transport of transports(url)) {
          let received = 0;
          const outcome = await drainStream(transport.sendStreamingMessage({ message }), () => void received++).then(() => undefined, (caught: unknown) => caught);
          expect(received, `${transport.protocolVersion} ${JSON.stringify({ proves, ids })}`).toBe(expected);
          if (expected < ids.length) expect(outcome).toBeInstanceOf(ResponseIdMismatchError);
          else expect(outcome).toBeUndefined();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('an error with a null id (the server could not read ours) keeps its own type', async () => {
    server = await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Task not found' } }));
    });
    await expect(transports(server.url)[0]!.getTask({ id: 'T1' })).rejects.toBeInstanceOf(TaskNotFoundError);
  });
});

describe('taskOwnership / eventOwnership', () => {
  const ours = { contextId: 'C1', messageId: 'm1' };
  it('a task in another context is foreign; a found task must hold our messageId; our own answer need not', () => {
    expect(taskOwnership({ id: 'T9', contextId: 'C9', status: { state: 'TASK_STATE_COMPLETED' } }, ours, 'answer')).toMatchObject({ ours: false, reason: 'foreign-context' });
    expect(isTaskOurs({ id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } }, ours, 'answer')).toBe(true);
    expect(taskOwnership({ id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } }, ours, 'found')).toMatchObject({ ours: false, reason: 'message-not-in-history' });
    expect(isTaskOurs({ id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' }, history: [{ ...message }] }, ours, 'found')).toBe(true);
    expect(taskOwnership({ id: 'T2', status: { state: 'TASK_STATE_WORKING' }, history: [message] }, { ...ours, taskId: 'T1' })).toMatchObject({ ours: false, reason: 'foreign-task' });
    // No context on the task and none to prove it by: only our messageId can.
    expect(isTaskOurs({ id: 'T1', status: { state: 'TASK_STATE_WORKING' } }, ours, 'answer')).toBe(false);
  });

  it('stream events must name the subscribed task', () => {
    const update = (taskId: string, contextId?: string) => ({ statusUpdate: { taskId, ...(contextId ? { contextId } : {}), status: { state: 'TASK_STATE_WORKING' as const } } });
    expect(eventOwnership(update('T1', 'other'), { taskId: 'T1', contextId: 'C1' })).toEqual({ ours: true });
    expect(eventOwnership(update('T2'), { taskId: 'T1' })).toMatchObject({ ours: false, reason: 'foreign-task' });
    expect(eventOwnership({ message: { ...message, role: 'ROLE_AGENT' } }, { taskId: 'T1' })).toMatchObject({ ours: false, reason: 'no-task-id' });
    expect(eventOwnership({ task: { id: 'T7', contextId: 'C7', status: { state: 'TASK_STATE_WORKING' } } }, { contextId: 'C1' })).toMatchObject({ ours: false, reason: 'foreign-context' });
  });

  it('property: a foreign context or a foreign task id is never ours, whatever the history holds', () => {
    const id = fc.string({ minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(id, id, id, id, fc.boolean(), fc.constantFrom('answer' as const, 'found' as const), (taskId, contextId, ourTask, ourContext, withHistory, source) => {
        const candidate = { id: taskId, contextId, status: { state: 'TASK_STATE_COMPLETED' as const }, ...(withHistory ? { history: [message] } : {}) };
        if (contextId !== ourContext) expect(isTaskOurs(candidate, { contextId: ourContext, messageId: 'm1' }, source)).toBe(false);
        if (taskId !== ourTask) expect(isTaskOurs(candidate, { taskId: ourTask, contextId, messageId: 'm1' }, source)).toBe(false);
        if (!withHistory && source === 'found') expect(isTaskOurs(candidate, { contextId, messageId: 'm1' }, source)).toBe(false);
        const event = { statusUpdate: { taskId, contextId, status: candidate.status } };
        expect(eventOwnership(event, { taskId: ourTask }).ours).toBe(taskId === ourTask);
      }),
      { numRuns: 500 },
    );
  });
});

describe('our messageId on an agent\'s own message proves nothing (one rule: historyHolds)', () => {
  const ours = { messageId: 'm1' };
  const agentCopy = { messageId: 'm1', role: 'ROLE_AGENT' as const, parts: [{ text: 'you said: hi' }] };

  it('a found task whose history holds our messageId only on the agent\'s message is not ours; with our own message it is', () => {
    const found = { id: 'T1', contextId: 'C-agent', status: { state: 'TASK_STATE_COMPLETED' as const } };
    expect(taskOwnership({ ...found, history: [agentCopy] }, ours, 'found')).toMatchObject({ ours: false, reason: 'message-not-in-history' });
    expect(taskOwnership({ ...found, history: [agentCopy, message] }, ours, 'found')).toEqual({ ours: true });
    expect(historyHolds([agentCopy], 'm1')).toBe(false);
  });

  it('a null id on a send answer whose only message with our messageId is the agent\'s (any spelling): refused, both versions', async () => {
    for (const role of ['ROLE_AGENT', 'agent']) {
      server = await startRawServer((request, response) => {
        const { method } = JSON.parse(request.body) as { method: string };
        const history = [{ kind: 'message', role, messageId: 'm1', parts: [] }];
        const result = method === 'SendMessage' ? { task: { ...task, contextId: 'C-agent', history } } : { ...task, contextId: 'C-agent', history, status: { state: 'working' } };
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, result }));
      });
      for (const transport of transports(server.url)) {
        const outcome = await transport.sendMessage({ message: { ...message, contextId: 'C-ours' } }).then((value) => value, (caught: unknown) => caught);
        expect(outcome, `${role} ${transport.protocolVersion}`).toBeInstanceOf(ResponseIdMismatchError);
      }
      await server.close();
      server = undefined;
    }
  });

  it('property: a found task is ours by messageId exactly when a message of ours (any role but the agent\'s) carries it', () => {
    const entry = fc.record({ messageId: fc.constantFrom('m1', 'm2', 'x'), role: fc.constantFrom('ROLE_USER' as const, 'ROLE_AGENT' as const, 'ROLE_UNSPECIFIED' as const) });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 6 }), (entries) => {
        const history = entries.map((each) => ({ ...each, parts: [] }));
        const expected = entries.some((each) => each.messageId === 'm1' && each.role !== 'ROLE_AGENT');
        expect(historyHolds(history, 'm1')).toBe(expected);
        expect(isTaskOurs({ id: 'T1', status: { state: 'TASK_STATE_WORKING' }, history }, ours, 'found')).toBe(expected);
      }),
      {
        numRuns: 300,
        examples: [[[{ messageId: 'm1', role: 'ROLE_AGENT' }]], [[{ messageId: 'm1', role: 'ROLE_AGENT' }, { messageId: 'm1', role: 'ROLE_USER' }]], [[{ messageId: 'm1', role: 'ROLE_UNSPECIFIED' }]], [[]]],
      },
    );
  });
});

describe('V5: an answer that arrived is never "not sent"', () => {
  it('property: any HTTP status with any body maps to an error whose delivery is "received"', () => {
    fc.assert(
      fc.property(fc.integer({ min: 200, max: 599 }), fc.constantFrom('application/json', 'text/html', undefined), fc.string({ maxLength: 200 }), (status, contentType, body) => {
        expect(errorFromHttp(status, contentType, body).delivery).toBe('received');
      }),
      { numRuns: 500 },
    );
  });

  it('connection refused -> not-sent; accepted but never answered -> maybe; headers then silence -> received', async () => {
    const refused = await startRawServer(() => undefined);
    const refusedUrl = refused.url;
    await refused.close();
    const timeout = { requestTimeoutMs: 300 };
    const refusedError = await new JsonRpcTransport({ url: refusedUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, timeout).getTask({ id: 'T1' }).catch((error: unknown) => error);
    expect(refusedError).toBeInstanceOf(NetworkError);
    expect(deliveryOf(refusedError)).toBe('not-sent');

    const sockets: import('node:net').Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket)); // accepts, reads nothing, answers nothing
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    const hung = await new JsonRpcTransport({ url: silentUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, timeout).sendMessage({ message }).catch((error: unknown) => error);
    expect(hung).toMatchObject({ code: 'NETWORK_ERROR', delivery: 'maybe' });
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));

    server = await startRawServer(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"jsonrpc":"2.0",');
      await sleep(2_000);
      response.end();
    });
    const slowBody = await new JsonRpcTransport({ url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, timeout).sendMessage({ message }).catch((error: unknown) => error);
    expect(slowBody).toMatchObject({ code: 'NETWORK_ERROR', delivery: 'received' });
  });
});

describe('taskShownOurs: the rule for a Task given to us about our message (a send answer, a task a Message named)', () => {
  const ours = { role: 'ROLE_USER' as const, messageId: 'm1', parts: [{ text: 'book' }] };
  const theirs = { role: 'ROLE_USER' as const, messageId: 'other', parts: [{ text: 'book' }] };
  const echo = { role: 'ROLE_AGENT' as const, messageId: 'm1', parts: [{ text: 'book' }] };
  it('property: ours by our context, or our message in its history; the request id only when there is nothing to compare; never another task id', () => {
    const maybe = (values: string[]) => fc.option(fc.constantFrom(...values), { nil: undefined });
    fc.assert(
      fc.property(
        fc.constantFrom('T1', 'T2'),
        maybe(['C1', 'C2', '']),
        fc.constantFrom<'ours' | 'theirs' | 'echo' | 'none'>('ours', 'theirs', 'echo', 'none'),
        maybe(['C1']),
        maybe(['T1']),
        fc.boolean(),
        (taskId, contextId, history, sentContext, heldTask, requestIdProves) => {
          const task = { id: taskId, status: { state: 'TASK_STATE_COMPLETED' as const }, ...(contextId !== undefined ? { contextId } : {}), ...(history === 'none' ? {} : { history: [{ ours, theirs, echo }[history]] }) };
          const expected = { messageId: 'm1', ...(sentContext ? { contextId: sentContext } : {}), ...(heldTask ? { taskId: heldTask } : {}) };
          const verdict = taskShownOurs(task, expected, { requestIdProves });
          const comparable = sentContext !== undefined && !!contextId;
          const shown = (comparable && contextId === sentContext) || history === 'ours' || (requestIdProves && !comparable && (sentContext === undefined || heldTask !== undefined));
          expect(verdict.ours).toBe((heldTask === undefined || taskId === heldTask) && shown);
          // The send answer's rule before it was shared: in our context by the request id, else our message in its history.
          if (requestIdProves) {
            const contextOnly = taskOwnership(task, { ...expected, ...(sentContext ? {} : { messageId: undefined }) }, 'answer');
            const before = contextOnly.ours || (contextOnly.reason === 'foreign-context' && taskOwnership(task, { messageId: 'm1', ...(heldTask ? { taskId: heldTask } : {}) }, 'found').ours);
            expect(verdict.ours).toBe(before);
          }
        },
      ),
      { numRuns: 500, examples: [['T1', 'C2', 'ours', 'C1', undefined, false], ['T1', 'C2', 'theirs', 'C1', undefined, true], ['T1', undefined, 'echo', 'C1', undefined, true], ['T1', '', 'none', undefined, undefined, true]] },
    );
  });
});
