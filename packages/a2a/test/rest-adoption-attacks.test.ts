/**
 * Attacks on the HTTP+JSON adoption of a non-2xx answer (rest-framing.test.ts; docs/a2a-edge.md "Ownership"). The
 * three facts stay apart: delivery (the status: the agent read the request), ownership (the body names our request),
 * effect (what the body says was done). Two kinds broke:
 * - a body that carries no verdict of its own: a Message (a direct reply) in a non-2xx is the agent's words around a
 *   failure status ("invalid request", "internal error" in our context); adopted, a 400 refusal became a COMPLETED
 *   step with the error text as its output. A Task (or a task event) carries its own state: it may be adopted.
 * - a proof that compares a field the request does not have: a ListTasks without a context filter (the search's
 *   time-bounded passes) took any non-empty page in a 5xx as ours.
 * And a true answer was thrown away: a whole JSON answer to a stream request in a 2xx had to prove itself by content,
 * where the same body to the plain request is the answer by its framing (an agent's Message without a context: the
 * step went to the search, which finds no task for a message, then to a person).
 * Held (kept as cases): a task id that differs by a prefix, case, or Unicode normalization is not the id asked.
 * Byte-exact node:http server; A2A 1.0 and 0.3 HTTP+JSON.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, sendEffectOf } from '../src/errors.ts';
import { drainStream } from '../src/stream.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };

let answer: () => { status: number; body: string } = () => ({ status: 200, body: '{}' });
let server: RawServer;
beforeAll(async () => {
  server = await startRawServer((_request, response) => {
    const { status, body } = answer();
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
});
afterAll(() => server.close());

const transport = (v03 = false) => createTransport({ url: server.url, protocolBinding: 'HTTP+JSON', protocolVersion: v03 ? '0.3' : '1.0' });

/** An agent's Message in our context (and naming `taskId` when given), 1.0 or 0.3 ProtoJSON. */
const agentMessage = (v03: boolean, taskId?: string) => ({
  message: { messageId: 'reply', contextId: 'c-ours', ...(taskId ? { taskId } : {}), role: 'ROLE_AGENT', ...(v03 ? { content: [{ text: 'invalid request' }] } : { parts: [{ text: 'invalid request' }] }) },
});
const task = (id: string, contextId: string) => ({ id, contextId, status: { state: 'TASK_STATE_COMPLETED' } });

/** What the status alone gives: the same call answered with a body that proves nothing. */
async function statusAlone(status: number, call: () => Promise<unknown>): Promise<unknown> {
  answer = () => ({ status, body: '{}' });
  return call().then(() => 'answered', (error: unknown) => error);
}

const outcome = (call: () => Promise<unknown>) => call().then((value) => ({ value }), (error: unknown) => error);

describe('a Message carries no verdict: a non-2xx around it is the answer', () => {
  for (const v03 of [false, true]) {
    it(`${v03 ? '0.3' : '1.0'} SendMessage answered HTTP 400 with the agent's Message in our context: the 400's refusal (no effect), not a reply`, async () => {
      const send = () => transport(v03).sendMessage({ message });
      const refused = await statusAlone(400, send);
      answer = () => ({ status: 400, body: JSON.stringify(agentMessage(v03)) });
      const error = await outcome(send);
      expect(error).toBeInstanceOf(A2AError);
      expect((error as A2AError).code).toBe((refused as A2AError).code);
      expect(sendEffectOf(error)).toBe(sendEffectOf(refused));
    });

    it(`${v03 ? '0.3' : '1.0'} SendStreamingMessage answered HTTP 500 with a Message in our context: an error, no event`, async () => {
      answer = () => ({ status: 500, body: JSON.stringify(agentMessage(v03)) });
      const events: unknown[] = [];
      const error = await drainStream(transport(v03).sendStreamingMessage({ message }), (event) => void events.push(event)).then(() => 'ended', (failure: unknown) => failure);
      expect(error).toBeInstanceOf(A2AError);
      expect(events).toEqual([]);
    });
  }

  it('1.0 SubscribeToTask answered HTTP 503 with a Message naming our task: an error, no event', async () => {
    answer = () => ({ status: 503, body: JSON.stringify(agentMessage(false, 'T1')) });
    const events: unknown[] = [];
    const error = await drainStream(transport().subscribeToTask({ id: 'T1' }), (event) => void events.push(event)).then(() => 'ended', (failure: unknown) => failure);
    expect(error).toBeInstanceOf(A2AError);
    expect(events).toEqual([]);
  });

  it('a Message in a 2xx is still the reply (holds)', async () => {
    answer = () => ({ status: 200, body: JSON.stringify(agentMessage(false)) });
    expect(await transport().sendMessage({ message })).toMatchObject({ message: { messageId: 'reply' } });
  });
});

describe('a ListTasks page proves itself ours only by the context we asked for', () => {
  const page = JSON.stringify({ tasks: [task('T-other', 'c-other')], nextPageToken: 'p2' });

  it('HTTP 500 with a non-empty page, no context filter (a time-bounded search pass): the 500, not the page', async () => {
    answer = () => ({ status: 500, body: page });
    const error = await outcome(() => transport().listTasks({ pageSize: 50, statusTimestampAfter: '2026-01-01T00:00:00Z' }));
    expect(error).toBeInstanceOf(A2AError);
    expect((error as A2AError).delivery).toBe('received');
  });

  it('HTTP 500 with a page in our context, asked by our context: the page (holds)', async () => {
    answer = () => ({ status: 500, body: JSON.stringify({ tasks: [task('T1', 'c-ours')] }) });
    expect(await transport().listTasks({ contextId: 'c-ours' })).toMatchObject({ tasks: [{ id: 'T1' }] });
  });
});

describe('a task id proves only itself (held)', () => {
  for (const id of ['T1x', 't1', 'T', 'T1 ', 'T\u0301', 'Ś']) {
    it(`GetTask T1 / Ś (NFC) answered HTTP 500 with task ${JSON.stringify(id)}: an error`, async () => {
      answer = () => ({ status: 500, body: JSON.stringify(task(id, 'c-x')) });
      const asked = id === 'Ś' ? 'S\u0301' : 'T1';
      expect(await outcome(() => transport().getTask({ id: asked }))).toBeInstanceOf(A2AError);
    });
  }
});

describe('property: a non-2xx is adopted only for a body that carries its own state and names what we asked', () => {
  it('any non-2xx, 1.0 or 0.3, a Message or a Task in our context, send or stream; ListTasks with or without our context filter', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(400, 404, 409, 429, 500, 502, 503),
        fc.constantFrom('message', 'task', 'list-filtered', 'list-unfiltered'),
        fc.boolean(),
        fc.boolean(),
        async (status, kind, v03, streaming) => {
          if (kind === 'list-filtered' || kind === 'list-unfiltered') {
            answer = () => ({ status, body: JSON.stringify({ tasks: [task('T1', 'c-ours')] }) });
            const result = await outcome(() => transport().listTasks(kind === 'list-filtered' ? { contextId: 'c-ours' } : { pageSize: 10 }));
            if (kind === 'list-filtered') expect(result).toMatchObject({ value: { tasks: [{ id: 'T1' }] } });
            else expect(result).toBeInstanceOf(A2AError);
            return;
          }
          answer = () => ({ status, body: JSON.stringify(kind === 'message' ? agentMessage(v03) : { task: task('OURS', 'c-ours') }) });
          const events: unknown[] = [];
          const result = streaming
            ? await drainStream(transport(v03).sendStreamingMessage({ message }), (event) => void events.push(event)).then(() => ({ value: events }), (error: unknown) => error)
            : await outcome(() => transport(v03).sendMessage({ message }));
          if (kind === 'message') expect(result).toBeInstanceOf(A2AError);
          else expect(result).not.toBeInstanceOf(A2AError);
        },
      ),
      { numRuns: 120 },
    );
  });
});

describe('a whole JSON answer to a stream request in a 2xx is the answer by its framing, as on the plain route', () => {
  /** The agent's Message without a context, or its Task in a context of its own with no history (R16 agents). */
  const noProof = (v03: boolean, kind: 'message' | 'task') =>
    kind === 'message'
      ? { message: { messageId: 'reply', role: 'ROLE_AGENT', ...(v03 ? { content: [{ text: 'done' }] } : { parts: [{ text: 'done' }] }) } }
      : { task: task('T-agent', '') };
  for (const v03 of [false, true]) {
    for (const kind of ['message', 'task'] as const) {
      it(`${v03 ? '0.3' : '1.0'} SendStreamingMessage answered HTTP 200 application/json with a ${kind} proving nothing by content: its one event, as SendMessage reads it`, async () => {
        answer = () => ({ status: 200, body: JSON.stringify(noProof(v03, kind)) });
        const plain = await transport(v03).sendMessage({ message });
        const events: unknown[] = [];
        await drainStream(transport(v03).sendStreamingMessage({ message }), (event) => void events.push((event as { response: unknown }).response));
        expect(events).toEqual([plain]);
      });
    }
  }
});

describe('property: a whole JSON answer to a stream request reads as the plain request reads it', () => {
  it('any status, 1.0 or 0.3, a Task or Message proven or not: the stream\'s one event is what SendMessage returns, an error when SendMessage throws', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(200, 201, 400, 500, 503),
        fc.constantFrom('message-ours', 'message-bare', 'task-ours', 'task-bare', 'task-foreign'),
        fc.boolean(),
        async (status, kind, v03) => {
          const content = v03 ? { content: [{ text: 'x' }] } : { parts: [{ text: 'x' }] };
          const body = {
            'message-ours': { message: { messageId: 'r', contextId: 'c-ours', role: 'ROLE_AGENT', ...content } },
            'message-bare': { message: { messageId: 'r', role: 'ROLE_AGENT', ...content } },
            'task-ours': { task: task('T1', 'c-ours') },
            'task-bare': { task: task('T1', '') },
            'task-foreign': { task: task('T9', 'c-other') },
          }[kind];
          answer = () => ({ status, body: JSON.stringify(body) });
          const plain = await outcome(() => transport(v03).sendMessage({ message }));
          const events: unknown[] = [];
          const streamed = await drainStream(transport(v03).sendStreamingMessage({ message }), (event) => void events.push((event as { response: unknown }).response)).then(
            () => ({ value: events }),
            (error: unknown) => error,
          );
          if (plain instanceof A2AError) expect(streamed).toBeInstanceOf(A2AError);
          else expect(streamed).toEqual({ value: [(plain as { value: unknown }).value] });
        },
      ),
      { numRuns: 80 },
    );
  });
});
