/**
 * Attack 26: new kinds of answer against the core promise (never lost, never done twice, never completed with what is
 * not ours), each read as its three facts: delivery, ownership, effect. Kinds not tried by attacks 22–24,
 * answer-attacks, envelope-attacks or content-coding: envelope members out of JSON-RPC 2.0 (another `jsonrpc`, neither
 * `result` nor `error`, both, the id in another JSON type), redirects on SendMessage (to the same URL, to another host),
 * an answer in UTF-16 or written one byte at a time, a send stream that opens with someone else's task, artifacts
 * replaced and appended across a resubscription, artifact ids named like Object.prototype members, events on our task
 * from another context or another request, ProtoJSON spellings (proto field names, Python timestamps, an unknown
 * state), and a search whose tasks carry no history or whose listing says more than it shows.
 * Real redis-server, real fleet, scripted raw node:http agents (exact bytes). Each agent "takes the message" first:
 * it books once and then lists/reads T1 (holding our message, COMPLETED with a1 "booked"), so an answer thrown away
 * can still be settled by the search, and a second SendMessage is a second booking.
 */
import { createServer, type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { artifactText, expectCompletedWith, finished, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { AU, SU, ev, task, taskEvent, type ScriptedAnswer, type ScriptedHandlers } from '../harness/scripted-agent.ts';
import { closeServer, listenOnLoopback, trackSockets } from '../harness/ports.ts';
import { startRawAgent } from '../harness/raw-agent.ts';

const h = useFieldCases();

type Params = { message: { messageId: string; contextId?: string; parts?: unknown[] } };

/**
 * Handlers of an agent that books on SendMessage (answering `answer`), then lists and reads T1 COMPLETED holding our
 * message with a1 "booked". `bookings` counts SendMessage bodies that reached the agent.
 */
function tookTheMessage(answer: (params: Params, id: unknown) => ScriptedAnswer, bookings: string[] = []): ScriptedHandlers {
  let message: Params['message'] | undefined;
  const booked = () => task('T1', 'COMPLETED', { contextId: message?.contextId, history: message ? [{ ...message, role: 'ROLE_USER' }] : [], artifacts: { a1: 'booked' } });
  return {
    SendMessage: (params: Params, call) => {
      message ??= params.message;
      bookings.push(params.message.messageId);
      return answer(params, call.id);
    },
    ListTasks: () => ({ result: { tasks: message ? [booked()] : [], nextPageToken: '', pageSize: 50, totalSize: message ? 1 : 0 } }),
    GetTask: () => (message ? { result: booked() } : { error: { code: -32001, message: 'Task not found' } }),
    SubscribeToTask: () => (message ? { sse: [taskEvent(booked())] } : { error: { code: -32001, message: 'Task not found' } }),
  };
}

/** The COMPLETED task holding our message (ownership proven by content). */
const oursCompleted = (params: Params) =>
  task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [{ ...params.message, role: 'ROLE_USER' }], artifacts: { a1: 'booked' } });

const raw = (status: number, body: string | Buffer, headers: Record<string, string> = {}): ScriptedAnswer => ({ http: { status, body, headers } });

describe('attack 26: envelope members outside JSON-RPC 2.0, after the agent booked', () => {
  const variants: [string, (params: Params, id: unknown) => ScriptedAnswer][] = [
    ['"jsonrpc": "1.0" around our success', (params, id) => raw(200, JSON.stringify({ jsonrpc: '1.0', id, result: { task: oursCompleted(params) } }))],
    ['no "jsonrpc" member around our success', (params, id) => raw(200, JSON.stringify({ id, result: { task: oursCompleted(params) } }))],
    ['our id with neither "result" nor "error"', (_params, id) => raw(200, JSON.stringify({ jsonrpc: '2.0', id }))],
    ['our id with both "result" and an "error" -32603', (params, id) => raw(200, JSON.stringify({ jsonrpc: '2.0', id, result: { task: oursCompleted(params) }, error: { code: -32603, message: 'internal' } }))],
    ['our numeric id echoed as a string', (params, id) => raw(200, JSON.stringify({ jsonrpc: '2.0', id: String(id), result: { task: oursCompleted(params) } }))],
    ['"result": null', (_params, id) => raw(200, JSON.stringify({ jsonrpc: '2.0', id, result: null }))],
  ];
  for (const [name, answer] of variants) {
    it(`${name}: one booking, COMPLETED with a1 (from the answer or the search), never re-sent`, async () => {
      const bookings: string[] = [];
      const { producer, agent, id } = await h.setUpAndDelegate(() => tookTheMessage(answer, bookings), { reconcileIntervalMs: 300 });
      await expectCompletedWith(producer, id, 'T1', 'booked');
      expect(bookings).toHaveLength(1);
      expect(agent.count('SendMessage')).toBe(1);
    }, 45_000);
  }
});

describe('attack 26: a redirect on SendMessage after the agent booked', () => {
  it('307 to the same URL: the redirect is not followed (one booking), the search adopts T1', async () => {
    const bookings: string[] = [];
    // A relative Location: the same URL the request went to.
    const { producer, id } = await h.setUpAndDelegate(() => tookTheMessage(() => raw(307, '', { location: '/a2a/jsonrpc', 'content-type': 'text/plain' }), bookings), { reconcileIntervalMs: 300 });
    await expectCompletedWith(producer, id, 'T1', 'booked');
    expect(bookings).toHaveLength(1);
  }, 45_000);

  it('308 to another host: our message never goes there; one booking, the search adopts T1', async () => {
    const elsewhere = await h.agentWith({ SendMessage: (params: Params) => ({ result: { task: task('T9', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'elsewhere' } }) } }) });
    const { producer, id } = await h.setUpAndDelegate(() => tookTheMessage(() => raw(308, '', { location: elsewhere.rpcUrl })), { reconcileIntervalMs: 300 });
    await expectCompletedWith(producer, id, 'T1', 'booked');
    expect(elsewhere.requests).toHaveLength(0);
  }, 45_000);
});

describe('attack 26: the bytes of a readable answer', () => {
  it('our success envelope in UTF-16LE with a BOM (charset=utf-16le): one booking, COMPLETED with a1', async () => {
    const bookings: string[] = [];
    const { producer, id } = await h.setUpAndDelegate(
      () => tookTheMessage((params, rpcId) => raw(200, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: rpcId, result: { task: oursCompleted(params) } }), 'utf16le')]), { 'content-type': 'application/json; charset=utf-16le' }), bookings),
      { reconcileIntervalMs: 300 },
    );
    await expectCompletedWith(producer, id, 'T1', 'booked');
    expect(bookings).toHaveLength(1);
  }, 45_000);

  it('an answer written one byte per chunk (multi-byte characters split): the artifact text kept exactly', async () => {
    const text = 'réservé ✓ 日本語 🎉 Ωmega';
    let sends = 0;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', async () => {
        const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
        if (request.method === 'GET') {
          const card = JSON.stringify({
            name: 'Byte agent', description: 'writes one byte at a time', version: '1.0.0',
            supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
            capabilities: { streaming: false, pushNotifications: false }, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
            skills: [{ id: 'bytes', name: 'Bytes', description: 'bytes', tags: [] }],
          });
          response.writeHead(200, { 'content-type': 'application/json' });
          return response.end(card);
        }
        const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (envelope.method !== 'SendMessage') {
          response.writeHead(200, { 'content-type': 'application/json' });
          return response.end(JSON.stringify({ jsonrpc: '2.0', id: envelope.id, error: { code: -32601, message: 'no' } }));
        }
        sends++;
        const message = envelope.params.message;
        const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: envelope.id, result: { task: task('T1', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a1: text } }) } }));
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
        response.flushHeaders();
        for (const byte of body) {
          if (response.destroyed) return;
          await new Promise<void>((resolve) => response.write(Buffer.from([byte]), () => setImmediate(resolve)));
        }
        response.end();
      });
    });
    const sockets = trackSockets(server);
    const port = await listenOnLoopback(server);
    try {
      const prefix = h.newPrefix();
      const producer = h.producer(prefix);
      await h.fleetFor(prefix);
      const { id } = await producer.delegate({ agent: `http://127.0.0.1:${port}/.well-known/agent-card.json`, text: 'go', idempotencyKey: `${prefix}-bytes` });
      const record = await finished(producer, id, 30_000);
      expect(record.state).toBe('COMPLETED');
      expect(artifactText(await viewOf(producer, id), 'a1')).toBe(text);
      expect(sends).toBe(1);
    } finally {
      sockets.destroyAll();
      await closeServer(server);
    }
  }, 45_000);
});

describe('attack 26: a send stream that opens with someone else\'s task', () => {
  it('first event: T9 in another context holding another message, COMPLETED "their booking"; then our T1: never COMPLETED with "their booking", one send', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate(
      () => ({
        SendStreamingMessage: (params: Params) => ({
          sse: [
            taskEvent(task('T9', 'COMPLETED', { contextId: 'someone-elses-context', history: [{ messageId: 'their-message', role: 'ROLE_USER', parts: [{ text: 'book theirs' }] }], artifacts: { a1: 'their booking' } })),
            taskEvent(task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked' } })),
          ],
        }),
        GetTask: (params) => ({ result: params.id === 'T9' ? task('T9', 'COMPLETED', { contextId: 'someone-elses-context', artifacts: { a1: 'their booking' } }) : task('T1', 'COMPLETED', { artifacts: { a1: 'booked' } }) }),
      }),
      { streamingSends: true, reconcileIntervalMs: 300 },
    );
    const record = await finished(producer, id, 30_000);
    expect(artifactText(await viewOf(producer, id), 'a1')).not.toBe('their booking');
    expect(record.taskId).not.toBe('T9');
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
  }, 45_000);
});

describe('attack 26: artifacts replaced and appended across a resubscription', () => {
  const followFast = { followBackoff: { baseMs: 100, capMs: 500 }, reconcileIntervalMs: 300 };
  /** Events of each subscription (the last one closes, earlier ones are cut); `final` is a1's text, as GetTask reads it. */
  const cases: [string, (context: string | undefined) => string[][], string][] = [
    [
      'stream 1: a1 "Hel" + append "lo", cut; stream 2: snapshot a1 "Hello", append " world" (lastChunk), COMPLETED',
      (context) => [
        [taskEvent(task('T1', 'WORKING', { contextId: context })), ev(AU('a1', false, false, 'Hel', { contextId: context })), ev(AU('a1', true, false, 'lo', { contextId: context }))],
        [taskEvent(task('T1', 'WORKING', { contextId: context, artifacts: { a1: 'Hello' } })), ev(AU('a1', true, true, ' world', { contextId: context })), ev(SU('COMPLETED', { contextId: context }))],
      ],
      'Hello world',
    ],
    [
      'one stream: a1 "draft" + append " more", then a1 with append:false "final" (lastChunk), COMPLETED',
      (context) => [
        [
          taskEvent(task('T1', 'WORKING', { contextId: context })),
          ev(AU('a1', false, false, 'draft', { contextId: context })),
          ev(AU('a1', true, false, ' more', { contextId: context })),
          ev(AU('a1', false, true, 'final', { contextId: context })),
          ev(SU('COMPLETED', { contextId: context })),
        ],
      ],
      'final',
    ],
    [
      'stream 1: a1 "Hello" + append " world", cut; stream 2: a snapshot already holding "Hello world", COMPLETED (the append not counted twice)',
      (context) => [
        [taskEvent(task('T1', 'WORKING', { contextId: context })), ev(AU('a1', false, false, 'Hello', { contextId: context })), ev(AU('a1', true, false, ' world', { contextId: context }))],
        [taskEvent(task('T1', 'WORKING', { contextId: context, artifacts: { a1: 'Hello world' } })), ev(SU('COMPLETED', { contextId: context }))],
      ],
      'Hello world',
    ],
  ];
  for (const [name, streams, final] of cases) {
    it(`${name}: a1 is "${final}"`, async () => {
      const { producer, id } = await h.setUpAndDelegate(
        (seen) => ({
          SubscribeToTask: (_params, call) => {
            const all = streams(seen.contextId);
            const index = Math.min(call.count, all.length) - 1;
            return { sse: all[index]!, endAfter: index < all.length - 1 ? 'destroy' : 'close' };
          },
          // A status-only finish is read in full: GetTask agrees with the stream.
          GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: final } }) }),
        }),
        followFast,
      );
      const record = await finished(producer, id, 30_000);
      expect(record.state).toBe('COMPLETED');
      expect(artifactText(await viewOf(producer, id), 'a1')).toBe(final);
    }, 45_000);
  }
});

describe('attack 26: a search whose tasks carry no history (spec §3.7: messages need not be kept)', () => {
  it('crash window 2: ListTasks by our context lists T1 (our context, no history), GetTask T1 has none either: never re-sent blind (no second booking)', async () => {
    let listedContext: string | undefined;
    const agent = await h.agentWith({
      ListTasks: (params) => {
        listedContext ??= params.contextId;
        const tasks = params.contextId ? [task('T1', 'COMPLETED', { contextId: params.contextId, artifacts: { a1: 'booked' }, timestamp: new Date().toISOString() })] : [];
        return { result: { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length } };
      },
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: listedContext, artifacts: { a1: 'booked' } }) }),
      SendMessage: (params: Params) => ({ result: { task: task('T2', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked again' } }) } }),
    });
    const { producer, id } = await h.sentNotRecorded(agent);
    const record = await finished(producer, id, 40_000);
    expect(agent.count('SendMessage')).toBe(0);
    expect(record.state === 'AMBIGUOUS' || (record.state === 'COMPLETED' && record.taskId === 'T1')).toBe(true);
  }, 60_000);
});

describe('attack 26: one answer holding two things', () => {
  it('a SendMessageResponse with both "task" (T1 WORKING, ours) and "message" ("interim"): T1 followed to its result, never COMPLETED from "interim"', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate(
      (seen) => ({
        SendMessage: (params: Params) => {
          seen.contextId ??= params.message.contextId;
          return { result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message] }), message: { messageId: 'm-interim', role: 'ROLE_AGENT', parts: [{ text: 'interim' }] } } };
        },
        SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }))] }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
      }),
      { reconcileIntervalMs: 300 },
    );
    const record = await finished(producer, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked');
  }, 45_000);

  it('a plain SendMessage answered as text/event-stream whose first event is T9 (another context, another message) then our T1: never COMPLETED with "their booking", one send', async () => {
    const foreign = JSON.stringify({ task: task('T9', 'COMPLETED', { contextId: 'someone-elses-context', history: [{ messageId: 'their-message', role: 'ROLE_USER', parts: [{ text: 'theirs' }] }], artifacts: { a1: 'their booking' } }) });
    const { producer, agent, id } = await h.setUpAndDelegate(
      () => tookTheMessage((params, rpcId) => raw(200, `data: {"jsonrpc":"2.0","id":${JSON.stringify(rpcId)},"result":${foreign}}\n\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: rpcId, result: { task: oursCompleted(params) } })}\n\n`, { 'content-type': 'text/event-stream' })),
      { reconcileIntervalMs: 300 },
    );
    const record = await finished(producer, id, 30_000);
    expect(record.taskId).not.toBe('T9');
    expect(artifactText(await viewOf(producer, id), 'a1')).not.toBe('their booking');
    expect(agent.count('SendMessage')).toBe(1);
  }, 45_000);
});

describe('attack 26: events on our task that are not ours', () => {
  it('SubscribeToTask(T1): an artifactUpdate for T1 in another context ("not ours") between our events: never kept', async () => {
    const { producer, id } = await h.setUpAndDelegate(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: [
            taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })),
            ev(AU('a9', false, true, 'not ours', { contextId: 'someone-elses-context' })),
            ev(AU('a1', false, true, 'booked', { contextId: seen.contextId })),
            taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } })),
          ],
        }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
      }),
    );
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    const view = await viewOf(producer, id);
    expect(view.artifacts.map((artifact) => artifact.artifactId)).toEqual(['a1']);
  }, 45_000);

  it('SubscribeToTask frames carrying another request\'s id (COMPLETED with "not ours"), GetTask WORKING then COMPLETED "booked": never COMPLETED with "not ours"', async () => {
    let reads = 0;
    const { producer, id } = await h.setUpAndDelegate(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: [
            ev(JSON.stringify({ jsonrpc: '2.0', id: 987_654, result: { task: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'not ours' } }) } })),
          ],
        }),
        GetTask: () => ({ result: ++reads < 3 ? task('T1', 'WORKING', { contextId: seen.contextId }) : task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
      }),
      { followBackoff: { baseMs: 100, capMs: 500 }, reconcileIntervalMs: 300 },
    );
    await finished(producer, id, 30_000);
    expect(artifactText(await viewOf(producer, id), 'a1')).not.toBe('not ours');
  }, 45_000);
});

describe('attack 26: artifact ids that are names of Object.prototype', () => {
  it('a COMPLETED answer with artifacts "__proto__", "constructor", "toString", "hasOwnProperty": all four kept with their text', async () => {
    const ids = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];
    const { producer, id } = await h.setUpAndDelegate(() => ({
      SendMessage: (params: Params) => ({
        result: { task: task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: ids.map((artifactId) => ({ artifactId, parts: [{ text: `text of ${artifactId}` }] })) }) },
      }),
    }));
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    const view = await viewOf(producer, id);
    for (const artifactId of ids) expect(artifactText(view, artifactId)).toBe(`text of ${artifactId}`);
  }, 45_000);

  it('a stream appending to artifact "__proto__" in two chunks: kept as one artifact with both chunks', async () => {
    const { producer, id } = await h.setUpAndDelegate(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: [
            taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })),
            ev(AU('__proto__', false, false, 'Hello', { contextId: seen.contextId })),
            ev(AU('__proto__', true, true, ' world', { contextId: seen.contextId })),
            ev(SU('COMPLETED', { contextId: seen.contextId })),
          ],
        }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: [{ artifactId: '__proto__', parts: [{ text: 'Hello world' }] }] }) }),
      }),
    );
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(producer, id), '__proto__')).toBe('Hello world');
  }, 45_000);
});

/** Our COMPLETED T1, written with ProtoJSON's original proto field names (snake_case), which parsers accept too. */
const snakeCompleted = (params: Params) => ({
  id: 'T1',
  context_id: params.message.contextId,
  status: { state: 'TASK_STATE_COMPLETED' },
  history: [{ message_id: params.message.messageId, context_id: params.message.contextId, role: 'ROLE_USER', parts: [{ text: 'go' }] }],
  artifacts: [{ artifact_id: 'a1', parts: [{ text: 'booked' }] }],
});

describe('attack 26: ProtoJSON spellings a 1.0 parser must accept', () => {
  const timestamped = (timestamp: string) => (params: Params, id: unknown) =>
    raw(200, JSON.stringify({ jsonrpc: '2.0', id, result: { task: { ...oursCompleted(params), status: { state: 'TASK_STATE_COMPLETED', timestamp } } } }));
  const variants: [string, (params: Params, id: unknown) => ScriptedAnswer][] = [
    ['our COMPLETED task in snake_case field names (context_id, message_id, artifact_id)', (params, id) => raw(200, JSON.stringify({ jsonrpc: '2.0', id, result: { task: snakeCompleted(params) } }))],
    ['a status timestamp with microseconds and "+00:00" (Python isoformat)', timestamped('2026-12-06T16:40:00.123456+00:00')],
    ['a status timestamp without a zone (Python naive isoformat)', timestamped('2026-12-06T16:40:00.123456')],
    ['a status timestamp with nanoseconds (ProtoJSON)', timestamped('2026-12-06T16:40:00.123456789Z')],
  ];
  for (const [name, answer] of variants) {
    it(`${name}: one booking, COMPLETED with a1`, async () => {
      const bookings: string[] = [];
      const { producer, id } = await h.setUpAndDelegate(() => tookTheMessage(answer, bookings), { reconcileIntervalMs: 300 });
      await expectCompletedWith(producer, id, 'T1', 'booked');
      expect(bookings).toHaveLength(1);
    }, 45_000);
  }

  it('a state no spelling explains ("TASK_STATE_PAUSED") on the answer, the task read COMPLETED later: one booking, never re-sent', async () => {
    const bookings: string[] = [];
    const { producer, id } = await h.setUpAndDelegate(
      () => tookTheMessage((params, rpcId) => raw(200, JSON.stringify({ jsonrpc: '2.0', id: rpcId, result: { task: { ...oursCompleted(params), status: { state: 'TASK_STATE_PAUSED' }, artifacts: [] } } })), bookings),
      { reconcileIntervalMs: 300 },
    );
    await finished(producer, id, 30_000);
    expect(bookings).toHaveLength(1);
  }, 45_000);
});

describe('attack 26: ProtoJSON spellings, the agent listing nothing (the answer alone must carry the result)', () => {
  const withTimestamp = (timestamp: string) => (params: Params) => ({ ...oursCompleted(params), status: { state: 'TASK_STATE_COMPLETED', timestamp } });
  /*
   * FINDING, fixed (ProtoJSON field names; `proto-names.ts`). Input: SendMessage answers our COMPLETED T1 with ProtoJSON's original proto field
   * names (`context_id`, `message_id`, `artifact_id`), our request id on the envelope; GetTask answers the same; the
   * agent lists nothing. Observed before the fix: AMBIGUOUS (a person decides), the result never kept. Expected: COMPLETED with a1,
   * one SendMessage: A2A 1.0 JSON is ProtoJSON, whose parsers accept the proto field name as well as the lowerCamelCase
   * one. Suspected location: packages/a2a/src/schema.ts (`MessageSchema.messageId`, `ArtifactSchema.artifactId`
   * required under their camelCase names only; the answer is refused as a ProtocolError, effect maybe, and the search
   * has nothing to list).
   */
  const variants: [string, (params: Params) => unknown][] = [
    ['snake_case field names', snakeCompleted],
    ['a "+00:00" timestamp with microseconds', withTimestamp('2026-12-06T16:40:00.123456+00:00')],
    ['a timestamp without a zone', withTimestamp('2026-12-06T16:40:00.123456')],
    ['a timestamp with nanoseconds', withTimestamp('2026-12-06T16:40:00.123456789Z')],
  ];
  for (const [name, taskOf] of variants) {
    it(`SendMessage and GetTask answer our COMPLETED task with ${name}: COMPLETED with a1, one SendMessage`, async () => {
      let sent: Params | undefined;
      const { producer, agent, id } = await h.setUpAndDelegate(() => ({
        SendMessage: (params: Params) => ((sent = params), { result: { task: taskOf(params) } }),
        GetTask: () => ({ result: taskOf(sent!) }),
        SubscribeToTask: () => ({ sse: [taskEvent(taskOf(sent!) as Record<string, unknown>)] }),
      }));
      await expectCompletedWith(producer, id, 'T1', 'booked');
      expect(agent.count('SendMessage')).toBe(1);
    }, 45_000);
  }
});

describe('attack 26: a listing that says more than it shows', () => {
  it('crash window 2: every ListTasks page shows no task but says totalSize 3 (tasks hidden from us): never re-sent blind', async () => {
    const agent = await h.agentWith({
      ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 3 } }),
      SendMessage: (params: Params) => ({ result: { task: task('T2', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked again' } }) } }),
    });
    const { producer, id } = await h.sentNotRecorded(agent);
    const record = await finished(producer, id, 40_000);
    expect(agent.count('SendMessage')).toBe(0);
    expect(record.state).toBe('AMBIGUOUS');
  }, 60_000);
});

describe('attack 26: ProtoJSON proto field names on a stream', () => {
  /*
   * FINDING, fixed (ProtoJSON field names, stream). Input: SubscribeToTask frames `{task}`, `{artifact_update}`,
   * `{status_update}` with `task_id`, `context_id`, `artifact_id`, `last_chunk`; GetTask in the same spelling.
   * Observed before the fix: never COMPLETED (the frames are refused, the follow ends with a person). Expected: COMPLETED with a1.
   * Suspected location: packages/a2a/src/schema.ts and shape.ts (`toWrappedResponse` knows only the camelCase members).
   */
  it('SubscribeToTask frames in snake_case (status_update, artifact_update, task_id, artifact_id, last_chunk), GetTask in snake_case too: COMPLETED with a1', async () => {
    const frame = (result: unknown) => ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result }));
    const { producer, id } = await h.setUpAndDelegate(
      (seen) => ({
        SubscribeToTask: () => ({
          sse: [
            frame({ task: { id: 'T1', context_id: seen.contextId, status: { state: 'TASK_STATE_WORKING' } } }),
            frame({ artifact_update: { task_id: 'T1', context_id: seen.contextId, artifact: { artifact_id: 'a1', parts: [{ text: 'booked' }] }, last_chunk: true } }),
            frame({ status_update: { task_id: 'T1', context_id: seen.contextId, status: { state: 'TASK_STATE_COMPLETED' } } }),
          ],
        }),
        GetTask: () => ({ result: { id: 'T1', context_id: seen.contextId, status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifact_id: 'a1', parts: [{ text: 'booked' }] }] } }),
      }),
    );
    await expectCompletedWith(producer, id, 'T1', 'booked');
  }, 45_000);
});

describe('attack 26: ProtoJSON proto field names on the HTTP+JSON binding (no request id: the content proves it ours)', () => {
  it('POST /message:send answered 200 with our COMPLETED task in snake_case, GET /tasks/T1 the same, nothing listed: COMPLETED with a1, one send', async () => {
    let sent: Params['message'] | undefined;
    const snakeTask = () => ({
      id: 'T1',
      context_id: sent?.contextId,
      status: { state: 'TASK_STATE_COMPLETED' },
      history: [{ message_id: sent?.messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }],
      artifacts: [{ artifact_id: 'a1', parts: [{ text: 'booked' }] }],
    });
    const reply = (response: ServerResponse, status: number, body: unknown) => {
      const text = JSON.stringify(body);
      response.writeHead(status, { 'content-type': 'application/a2a+json', 'content-length': String(Buffer.byteLength(text)) });
      response.end(text);
    };
    const agent = await startRawAgent((request, response, body) => {
      const path = (request.url ?? '').split('?')[0]!;
      if (path === '/.well-known/agent-card.json') {
        return reply(response, 200, {
          name: 'REST snake', description: 'prints proto field names', version: '1.0.0',
          capabilities: { streaming: false, pushNotifications: false }, defaultInputModes: ['text'], defaultOutputModes: ['text'],
          skills: [{ id: 'book', name: 'book', description: 'book', tags: [] }],
          supportedInterfaces: [{ protocolBinding: 'HTTP+JSON', url: `${agent.url}/rest`, protocolVersion: '1.0' }],
        });
      }
      if (request.method === 'POST' && path === '/rest/message:send') {
        sent = (JSON.parse(body) as Params).message;
        return reply(response, 200, { task: snakeTask() });
      }
      if (request.method === 'GET' && path === '/rest/tasks/T1' && sent) return reply(response, 200, snakeTask());
      return reply(response, 404, { error: { code: 404, status: 'NOT_FOUND', message: `no route ${path}` } });
    });
    try {
      const prefix = h.newPrefix();
      const producer = h.producer(prefix);
      await h.fleetFor(prefix);
      const { id } = await producer.delegate({ agent: `${agent.url}/.well-known/agent-card.json`, text: 'go', idempotencyKey: `${prefix}-rest` });
      await expectCompletedWith(producer, id, 'T1', 'booked');
      expect(agent.requests.filter((seen) => seen.url.endsWith('/message:send'))).toHaveLength(1);
    } finally {
      await agent.close();
    }
  }, 45_000);
});
