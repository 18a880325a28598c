/**
 * An HTTP+JSON answer is read by what it proves, not by the HTTP status around it (docs/a2a-edge.md "Ownership"): a
 * non-2xx whose body is our Task (our messageId in its history, our context, the task id we asked about) or our
 * message answer is the answer, as a JSON-RPC success envelope carrying our id is in any status (envelope-framing.test.ts);
 * a body that proves nothing, or names another delegation, or is an error body, leaves the status to decide (its typed
 * error, Retry-After kept). A whole JSON answer to a stream request is its one event under the same proof. Before this,
 * every such 5xx was an error: the COMPLETED task thrown away, the step sent to the search or to AMBIGUOUS.
 * Byte-exact node:http server; A2A 1.0 and 0.3 HTTP+JSON.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport } from '../src/client.ts';
import { A2AError, sendEffectOf } from '../src/errors.ts';
import { drainStream } from '../src/stream.ts';
import type { A2ATransport } from '../src/transport.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

const message = { messageId: 'm-ours', contextId: 'c-ours', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] };

/** What the body holds: a task proven ours by its history or by its context, a message answer in our context (no verdict: never adopted in a non-2xx), a task naming neither, an error body, junk. */
type Body = 'ours-history' | 'ours-context' | 'ours-message' | 'foreign' | 'error' | 'ours-with-error' | 'not-json';
const OURS: readonly Body[] = ['ours-history', 'ours-context'];

/** A task (1.0 or 0.3 ProtoJSON: the same members here) with `contextId`, its history holding `messageIds`. */
function task(id: string, contextId: string, messageIds: string[], v03: boolean) {
  const history = messageIds.map((messageId) => (v03 ? { messageId, role: 'ROLE_USER', content: [{ text: 'hi' }] } : { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }] }));
  return { id, contextId, status: { state: 'TASK_STATE_COMPLETED' }, history };
}

function bodyOf(kind: Body, v03: boolean): string {
  switch (kind) {
    case 'ours-history':
      return JSON.stringify({ task: task('OURS', 'c-other', ['m-ours'], v03) });
    case 'ours-context':
      return JSON.stringify({ task: task('OURS', 'c-ours', [], v03) });
    case 'ours-message':
      return JSON.stringify({ message: { messageId: 'reply', contextId: 'c-ours', role: 'ROLE_AGENT', ...(v03 ? { content: [{ text: 'ok' }] } : { parts: [{ text: 'ok' }] }) } });
    case 'foreign':
      return JSON.stringify({ task: task('FOREIGN', 'c-other', ['m-other'], v03) });
    case 'error':
      return v03 ? JSON.stringify({ code: -32603, message: 'internal' }) : JSON.stringify({ error: { code: 500, status: 'INTERNAL', message: 'internal' } });
    case 'ours-with-error':
      return JSON.stringify({ task: task('OURS', 'c-ours', ['m-ours'], v03), error: { code: 500, message: 'internal' } });
    case 'not-json':
      return '<html>bad gateway</html>';
  }
}

let answer: () => { status: number; body: string; headers?: Record<string, string> } = () => ({ status: 200, body: '{}' });
let server: RawServer;
beforeAll(async () => {
  server = await startRawServer((_request, response) => {
    const { status, body, headers = {} } = answer();
    response.writeHead(status, { 'content-type': body.startsWith('<') ? 'text/html' : 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
    response.end(body);
  });
});
afterAll(() => server.close());

const transport = (v03 = false) => createTransport({ url: server.url, protocolBinding: 'HTTP+JSON', protocolVersion: v03 ? '0.3' : '1.0' });

/** What the send returned (`task:<id>` / `message`; a stream: its events joined) or the error it threw. */
async function sendOutcome(agent: A2ATransport, streaming: boolean): Promise<unknown> {
  const name = (response: object) => ('task' in response ? `task:${(response.task as { id: string }).id}` : 'message' in response ? 'message' : 'other');
  if (!streaming) return agent.sendMessage({ message }).then(name, (error: unknown) => error);
  const names: string[] = [];
  return drainStream(agent.sendStreamingMessage({ message }), (event) => void names.push(name(event.response))).then(() => names.join(','), (error: unknown) => error);
}

describe('examples', () => {
  it('HTTP 500 whose body is our COMPLETED task (our messageId in its history): the task, not an error', async () => {
    answer = () => ({ status: 500, body: bodyOf('ours-history', false) });
    expect(await sendOutcome(transport(), false)).toBe('task:OURS');
  });

  it('HTTP 503 whose body is a task in our context: the task', async () => {
    answer = () => ({ status: 503, body: bodyOf('ours-context', false) });
    expect(await sendOutcome(transport(), false)).toBe('task:OURS');
  });

  it('HTTP 502 whose body is a message answer in our context: the 502 (a Message carries no verdict of its own; rest-adoption-attacks.test.ts)', async () => {
    answer = () => ({ status: 502, body: bodyOf('ours-message', false) });
    expect(await sendOutcome(transport(), false)).toMatchObject({ code: 'UPSTREAM_ERROR', delivery: 'received' });
  });

  it('HTTP 502 whose body is a task proving nothing ours: the status decides (delivered, effect maybe), never that task', async () => {
    answer = () => ({ status: 502, body: bodyOf('foreign', false) });
    const error = await sendOutcome(transport(), false);
    expect(error).toMatchObject({ code: 'UPSTREAM_ERROR', delivery: 'received' });
    expect(sendEffectOf(error)).toBe('maybe');
  });

  it('HTTP 503 with an error body and Retry-After: the typed error with its Retry-After, even when the body also names our task', async () => {
    for (const kind of ['error', 'ours-with-error'] as const) {
      answer = () => ({ status: 503, body: bodyOf(kind, false), headers: { 'retry-after': '7' } });
      const error = await sendOutcome(transport(), false);
      expect(error).toBeInstanceOf(A2AError);
      expect(error).toMatchObject({ delivery: 'received', retryAfterMs: 7000 });
    }
  });

  it('GetTask and CancelTask answered HTTP 500 with the task we asked about: the task; with another task: an error', async () => {
    answer = () => ({ status: 500, body: JSON.stringify(task('T1', 'c-x', [], false)) });
    expect(await transport().getTask({ id: 'T1' })).toMatchObject({ id: 'T1' });
    expect(await transport().cancelTask({ id: 'T1' })).toMatchObject({ id: 'T1' });
    await expect(transport().getTask({ id: 'T2' })).rejects.toBeInstanceOf(A2AError);
  });

  it('0.3 HTTP+JSON: HTTP 500 whose body is our task: the task; a 0.3 error body stays the error, a 503\'s Retry-After kept', async () => {
    answer = () => ({ status: 500, body: bodyOf('ours-history', true) });
    expect(await sendOutcome(transport(true), false)).toBe('task:OURS');
    answer = () => ({ status: 503, body: bodyOf('error', true), headers: { 'retry-after': '7' } });
    expect(await sendOutcome(transport(true), false)).toMatchObject({ delivery: 'received', retryAfterMs: 7000 });
  });

  for (const v03 of [false, true]) {
    it(`${v03 ? '0.3' : '1.0'} SendStreamingMessage answered HTTP 500 application/json with our task: one event, the task`, async () => {
      answer = () => ({ status: 500, body: bodyOf('ours-history', v03) });
      expect(await sendOutcome(transport(v03), true)).toBe('task:OURS');
    });
  }
});

describe('property: an HTTP+JSON answer in any status is adopted exactly when its content proves it ours', () => {
  it('any non-2xx status, any body, 1.0 or 0.3, SendMessage or SendStreamingMessage', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(400, 404, 409, 429, 500, 502, 503, 504),
        fc.constantFrom<Body>('ours-history', 'ours-context', 'ours-message', 'foreign', 'error', 'ours-with-error', 'not-json'),
        fc.boolean(),
        fc.boolean(),
        async (status, kind, v03, streaming) => {
          answer = () => ({ status, body: bodyOf(kind, v03), headers: { 'retry-after': '3' } });
          const outcome = await sendOutcome(transport(v03), streaming);
          expect(outcome).not.toBe('task:FOREIGN');
          if (OURS.includes(kind)) expect(outcome).toBe('task:OURS');
          else {
            expect(outcome).toBeInstanceOf(A2AError);
            expect((outcome as A2AError).delivery).toBe('received');
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
