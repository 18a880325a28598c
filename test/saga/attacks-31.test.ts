/**
 * Attack round 31: hostile HTTP under the A2A answers (response headers past undici's limit, responses that do not
 * parse as HTTP/1.1, a redirect, 1xx before the answer, a 404 or 503 around work that was done), and searches that
 * page for ever or answer another request's id. Real redis-server, real fleet, scripted raw node:http agents counting
 * SendMessage per messageId. Each `it` holds; the findings (three kinds) are marked FIXED FINDING.
 */
import { describe, expect, it } from 'vitest';
import { artifactText, finished, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { holder } from '../harness/holders.ts';
import { getTaskCalls, pushScene } from '../harness/push-scene.ts';
import { startRestAgent, type RestAnswer } from '../harness/rest-agent.ts';
import { task, type ScriptedAnswer, type ScriptedHandlers } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const keep = closeKeptAfterEach();
/** Short request timeout: a send whose delivery is "maybe" is searched `requestTimeoutMs + 1 s` later (sendSettleMs). */
const fast = { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 }, requestTimeoutMs: 3_000 };

/** Our message as an agent keeps it in a task's history. */
const userOf = (messageId: string) => ({ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] });
/** A one-page JSON-RPC ListTasks answer. */
const page = (tasks: unknown[]) => ({ result: { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length } });
/** A response header past undici's 16 KiB limit on a whole response head (`UND_ERR_HEADERS_OVERFLOW`). */
const HUGE_HEADERS = { 'x-pad': 'p'.repeat(64 * 1024) };
/** Bytes that are no HTTP/1.1 response (undici's parser throws `HTTPParserError`). */
const MALFORMED: Record<string, string> = {
  'a status line that is not HTTP': 'HTTX/1.1 200 OK\r\n\r\n{}',
  'an invalid header token': 'HTTP/1.1 200 OK\r\nBad Header\r\nContent-Length: 2\r\n\r\n{}',
  'a chunk size that is not hex': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nabc\r\n0\r\n\r\n',
  'two different Content-Length headers': 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x',
};

type Booked = Record<string, unknown>;
/** How a booking agent answers the send that booked `booked`: `call` is the request's (its JSON-RPC id). */
type BookingAnswer = (call: { id: unknown }, booked: Booked) => ScriptedAnswer;

/**
 * The handlers of an agent that books on `method` (T1 COMPLETED with a1 "booked", our message in its history, our
 * context), counting each messageId in `sends`, and answers `answer` instead of its task; ListTasks and GetTask show
 * T1 honestly, SubscribeToTask refuses (terminal).
 */
function bookingAgent(sends: Map<string, number>, answer: BookingAnswer, method: 'SendMessage' | 'SendStreamingMessage' = 'SendMessage'): ScriptedHandlers {
  let booked: Booked | undefined;
  return {
    [method]: (params: any, call: { id: unknown }) => {
      sends.set(params.message.messageId, (sends.get(params.message.messageId) ?? 0) + 1);
      booked ??= task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked' } });
      return answer(call, booked);
    },
    ListTasks: () => page(booked ? [booked] : []),
    GetTask: () => (booked ? { result: booked } : { error: { code: -32001, message: 'Task not found' } }),
    SubscribeToTask: () => ({ error: { code: -32004, message: 'terminal' } }),
  };
}

/** One delegation to a `bookingAgent` answering `answer`. */
async function bookedThenAnswered(answer: BookingAnswer, options = fast) {
  const sends = new Map<string, number>();
  const { producer, agent, id } = await h.setUpAndDelegate(() => bookingAgent(sends, answer), options);
  return { producer, agent, id, sends };
}

/** Asserts the delegation COMPLETED on T1 with a1 "booked", and each messageId was sent once. */
async function adoptedOnce(setup: Awaited<ReturnType<typeof bookedThenAnswered>>) {
  const record = await finished(setup.producer, setup.id, 45_000);
  expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  expect(artifactText(await viewOf(setup.producer, setup.id), 'a1')).toBe('booked');
  expect([...setup.sends.values()]).toEqual([1]);
}

describe('attack 31: the agent booked, then its answer broke at the HTTP level (the request left: delivery maybe or received)', () => {
  it('SendMessage answered with a 64 KiB response header (undici: headers overflow): searched, T1 adopted, one SendMessage', async () => {
    await adoptedOnce(await bookedThenAnswered((call) => ({ http: { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: call.id, result: {} }), headers: HUGE_HEADERS } })));
  }, 60_000);

  for (const [name, bytes] of Object.entries(MALFORMED)) {
    it(`SendMessage answered with ${name}: searched, T1 adopted, one SendMessage`, async () => {
      await adoptedOnce(await bookedThenAnswered(() => ({ raw: bytes })));
    }, 60_000);
  }

  it('SendMessage answered 307 to another agent B\'s endpoint: never followed (B gets nothing), T1 adopted at A, one SendMessage', async () => {
    const b = await h.agentWith({ SendMessage: (params) => ({ result: { task: task('TB', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked at B' } }) } }) });
    const setup = await bookedThenAnswered(() => ({ http: { status: 307, body: '', headers: { location: b.rpcUrl } } }));
    await adoptedOnce(setup);
    expect(b.count('SendMessage')).toBe(0);
  }, 60_000);

  it('SendMessage answered "102 Processing" and "103 Early Hints", then our task: COMPLETED from the answer, one SendMessage', async () => {
    const setup = await bookedThenAnswered((call, booked) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { task: booked } });
      return { raw: `HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}` };
    });
    await adoptedOnce(setup);
    expect(setup.agent.count('ListTasks')).toBe(0);
  }, 60_000);

  it('SendMessage answered 503 with Retry-After: 1 although T1 was booked: searched (never resent on the agent\'s word), T1 adopted, one SendMessage', async () => {
    await adoptedOnce(await bookedThenAnswered(() => ({ http: { status: 503, body: JSON.stringify({ error: 'busy' }), headers: { 'retry-after': '1' } } })));
  }, 60_000);

  it('SendMessage answered HTTP 200 with our task COMPLETED but another request\'s id (999999): never applied from it, T1 adopted by the search, one SendMessage', async () => {
    await adoptedOnce(await bookedThenAnswered((_call, booked) => ({ envelopeId: 999_999, result: { task: booked } })));
  }, 60_000);
});


/*
 * FIXED FINDING (an answer undici cannot read left the transport untyped; kind: every failure of the HTTP layer is a
 * typed A2A error). Input: a bound task whose every GetTask (SubscribeToTask refused or answered with bytes that are no
 * HTTP) is answered with a 64 KiB response header (undici HeadersOverflowError) or a status line / header token / chunk
 * size that does not parse (HTTPParserError); or crash window 2 with every ListTasks answered so. Observed: the row
 * WORKING (or INTENT) after 45 s, nobody told: `toNetworkError` passed these errors through untyped, `readFailure` and
 * `searchForMessage` rethrew them as "not the agent's", the job failed and ran again for ever; the same for the read of a
 * suspect a push named (T2 showing our message; row WORKING, the evidence never read). Expected: an unreadable
 * answer (delivery received), bounded rounds, a person. Fixed: `toNetworkError` (packages/a2a/src/http.ts) types them
 * (`UNREADABLE_ANSWER_ERRORS` → ProtocolError, any other undici error → NetworkError). Property:
 * packages/a2a/test/unreadable-http-answer-property.test.ts.
 */
describe('attack 31: reads and searches whose answers break at the HTTP level, for ever (never wait for ever with nobody told)', () => {
  it('T1 bound WORKING; SubscribeToTask unsupported; every GetTask answered with a 64 KiB header: ends with a person in bounded calls, one SendMessage', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: (_params, call) => ({ http: { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: call.id, result: task('T1', 'WORKING', { contextId: seen.contextId }) }), headers: HUGE_HEADERS } }),
      ListTasks: (_params, call) => ({ http: { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }), headers: HUGE_HEADERS } }),
    }), { ...fast, noProgressWindowMs: 600_000 });
    const record = await finished(producer, id, 45_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('T1 bound WORKING; every SubscribeToTask and GetTask answered with bytes that are no HTTP: ends with a person in bounded calls, one SendMessage', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate(() => ({
      SubscribeToTask: () => ({ raw: MALFORMED['an invalid header token']! }),
      GetTask: () => ({ raw: MALFORMED['a status line that is not HTTP']! }),
      ListTasks: () => ({ raw: MALFORMED['a status line that is not HTTP']! }),
    }), { ...fast, noProgressWindowMs: 600_000 });
    const record = await finished(producer, id, 45_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('crash window 2: every ListTasks answered with bytes that are no HTTP: AMBIGUOUS (the search unavailable), never resent', async () => {
    const agent = await h.agentWith({ ListTasks: () => ({ raw: MALFORMED['a chunk size that is not hex']! }) });
    const { producer, id } = await h.sentNotRecorded(agent, undefined, fast);
    const record = await finished(producer, id, 45_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'SEARCH_UNAVAILABLE' } });
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);

  it('crash window 2: every ListTasks answered with a 64 KiB header: AMBIGUOUS (the search unavailable), never resent', async () => {
    const agent = await h.agentWith({ ListTasks: (_params, call) => ({ http: { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }), headers: HUGE_HEADERS } }) });
    const { producer, id } = await h.sentNotRecorded(agent, undefined, fast);
    const record = await finished(producer, id, 45_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'SEARCH_UNAVAILABLE' } });
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);
});

describe('attack 31: searches that lie', () => {
  it('crash window 2: ListTasks pages for ever (each page empty, a fresh nextPageToken): bounded calls, AMBIGUOUS, never resent', async () => {
    const agent = await h.agentWith({ ListTasks: (_params, call) => ({ result: { tasks: [], nextPageToken: `page-${call.count}`, pageSize: 50, totalSize: 1_000 } }) });
    const { producer, id } = await h.sentNotRecorded(agent, undefined, fast);
    const record = await finished(producer, id, 45_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);

  it('crash window 2: ListTasks pages for ever, each page a fresh token and a fresh task of another context: bounded calls, AMBIGUOUS, never resent', async () => {
    const agent = await h.agentWith({
      ListTasks: (_params, call) => ({ result: { tasks: [task(`X${call.count}`, 'COMPLETED', { contextId: `other-${call.count}`, history: [userOf(`theirs-${call.count}`)] })], nextPageToken: `page-${call.count}`, pageSize: 1, totalSize: 1_000_000 } }),
      GetTask: (params) => ({ result: task(params.id, 'COMPLETED', { contextId: 'other', history: [userOf('theirs')] }) }),
    });
    const { producer, id } = await h.sentNotRecorded(agent, undefined, fast);
    const record = await finished(producer, id, 45_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);

  it('crash window 2: ListTasks shows our messageId in T1 of another context and answers "id": 777 (another request): never adopted from the lie of the envelope, never resent', async () => {
    let messageId = '';
    const agent = await h.agentWith({
      ListTasks: () => ({ envelopeId: 777, result: { tasks: [task('T1', 'COMPLETED', { contextId: 'theirs', history: [userOf(messageId)] })], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: 'theirs', history: [userOf(messageId)], artifacts: { a1: 'booked' } }) }),
    });
    const { producer, id } = await h.sentNotRecorded(agent, (ours) => (messageId = ours), fast);
    const record = await finished(producer, id, 45_000);
    expect(['AMBIGUOUS', 'COMPLETED']).toContain(record.state);
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);
});

describe('attack 31: an HTTP+JSON agent that booked and answers in a status that says otherwise', () => {
  // Attack 32 added the last: HTTP 200 with an empty body (searched, T1 adopted).
  const answers: [string, (booked: Record<string, unknown>) => RestAnswer][] = [
    ...[404, 500].map((status): [string, (booked: Record<string, unknown>) => RestAnswer] => [`${status} with our own Task COMPLETED (our context, our message in its history, a1)`, (booked) => ({ status, body: booked })]),
    ['200 with an empty body', () => ({ status: 200, raw: { body: '', contentType: 'application/a2a+json' } })],
  ];
  for (const [name, answer] of answers) {
    it(`message:send answered ${name}: COMPLETED with a1 (the answer or the search), one message:send`, async () => {
      let booked: Record<string, unknown> | undefined;
      const agent = await startRestAgent((method, path, body) => {
        if (method === 'POST' && path === '/message:send') {
          booked ??= task('T1', 'COMPLETED', { contextId: body.message.contextId, history: [body.message], artifacts: { a1: 'booked' } });
          return answer(booked);
        }
        if (method === 'GET' && path === '/tasks/T1' && booked) return { status: 200, body: booked };
        if (method === 'GET' && path === '/tasks') return { status: 200, body: { tasks: booked ? [booked] : [], nextPageToken: '', pageSize: 50, totalSize: booked ? 1 : 0 } };
        return { status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'no route' } } };
      }, { streaming: false });
      keep(agent);
      const prefix = h.newPrefix();
      const producer = h.producer(prefix);
      await h.fleetFor(prefix, fast);
      const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-rest` });
      const record = await finished(producer, id, 45_000);
      expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
      expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked');
      expect(agent.count('POST /message:send')).toBe(1);
    }, 60_000);
  }
});

/*
 * FIXED FINDING (a refusal read from one frame of a stream whose next frame names our task; kind: a refusal proves
 * nothing was created only as the whole answer). Input: a workflow step by skill over A and B; A books and answers
 * SendMessage as an event stream (or SendStreamingMessage) whose first frame is a -32602 error and whose next frame is
 * our task COMPLETED. Observed: FAILED INVALID_PARAMS at A, the step re-delegated to B: booked twice. Expected: effect
 * maybe, the search adopts T1, B never asked. Fixed: an error in a stream frame is marked (`inStreamFrame`, set in
 * src/stream.ts) and `sendEffectOf` reads it as maybe; the SSE-framed plain answer of several events is unreadable
 * (`severalEvents`, the third finding below). Property:
 * packages/a2a/test/stream-frame-refusal-property.test.ts.
 */
describe('attack 31: a refusal that is not the whole answer (the rest of the body names our task)', () => {
  /**
   * A workflow step by skill over agents A (a `bookingAgent` answering `answer` on `method`) and B (books at once):
   * asserts the step was never re-delegated to B and A got each messageId once.
   */
  async function neverRedelegated(answer: BookingAnswer, method: 'SendMessage' | 'SendStreamingMessage' = 'SendMessage', fleetOptions = {}) {
    const sends = new Map<string, number>();
    const a = await h.agentWith(bookingAgent(sends, answer, method));
    const { b, view } = await h.stepOverTwo(a.cardUrl, { ...fast, ...fleetOptions });
    expect(b.count('SendMessage') + b.count('SendStreamingMessage')).toBe(0);
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect([...sends.values()]).toEqual([1]);
  }
  const refusal = (id: unknown) => JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32602, message: 'Invalid params' } });

  it('SendMessage answered as an event stream: a first event -32602 (a refusal), then our task COMPLETED: never re-delegated to B, A sent once', async () => {
    await neverRedelegated((call, booked) => ({
      http: { status: 200, body: `data: ${refusal(call.id)}\n\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { task: booked } })}\n\n`, headers: { 'content-type': 'text/event-stream' } },
    }));
  }, 60_000);

  it('a streaming send whose first frame is an error event -32602, then our task COMPLETED: never re-delegated to B, A sent once', async () => {
    await neverRedelegated((_call, booked) => ({ sse: [`event: error\ndata: ${refusal(1)}\n\n`, `data: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: booked } })}\n\n`] }), 'SendStreamingMessage', { streamingSends: true });
  }, 60_000);

  it('SendMessage answered a JSON-RPC batch: our id on a -32602 refusal, our task COMPLETED on an element without an id: never re-delegated to B, A sent once', async () => {
    await neverRedelegated((call, booked) => ({ http: { status: 200, body: `[${refusal(call.id)},${JSON.stringify({ jsonrpc: '2.0', id: null, result: { task: booked } })}]` } }));
  }, 60_000);
});

describe('attack 31: a stream whose HTTP framing breaks after its first event', () => {
  it('SubscribeToTask: a valid chunked head and the WORKING snapshot, then a chunk size that is not hex; GetTask later COMPLETED: COMPLETED with a1, one SendMessage', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: (_params, call) => {
        const frame = `data: ${JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { task: task('T1', 'WORKING', { contextId: seen.contextId }) } })}\n\n`;
        return { raw: `HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(frame).toString(16)}\r\n${frame}\r\nZZ\r\nnot a chunk\r\n` };
      },
      GetTask: (_params, call) => ({ result: task('T1', call.count < 3 ? 'WORKING' : 'COMPLETED', { contextId: seen.contextId, ...(call.count < 3 ? {} : { artifacts: { a1: 'booked' } }) }) }),
    }), fast);
    const record = await finished(producer, id, 45_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);
});

describe('attack 31: the answer to a person\'s reply breaks (the reply journaled sent: never sent twice)', () => {
  const question = { messageId: 'q-rooms', role: 'ROLE_AGENT', parts: [{ text: 'two rooms or one?' }] };
  const replies: [string, (id: unknown, working: Record<string, unknown>) => ScriptedAnswer][] = [
    ['bytes that are no HTTP', () => ({ raw: MALFORMED['an invalid header token']! })],
    ['a 64 KiB response header', (id, working) => ({ http: { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id, result: { task: working } }), headers: HUGE_HEADERS } })],
    ['an event stream whose first frame is -32602, then our task WORKING', (id, working) => ({
      http: { status: 200, body: `data: ${JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32602, message: 'Invalid params' } })}\n\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result: { task: working } })}\n\n`, headers: { 'content-type': 'text/event-stream' } },
    })],
  ];
  for (const [name, answerReply] of replies) {
    it(`T1 asks a question; the reply's SendMessage is answered with ${name}; T1 then COMPLETED: COMPLETED with a1, the reply sent once, our first message once`, async () => {
      const sends = new Map<string, number>();
      let contextId = '';
      let replied = false;
      const ours = (state: string, extra: Record<string, unknown> = {}) => task('T1', state, { contextId, ...extra });
      const { producer, id } = await h.setUpAndDelegate(() => ({
        SendMessage: (params, call) => {
          sends.set(params.message.messageId, (sends.get(params.message.messageId) ?? 0) + 1);
          if (params.message.taskId !== 'T1') {
            contextId = params.message.contextId;
            return { result: { task: ours('INPUT_REQUIRED', { history: [params.message], message: question }) } };
          }
          replied = true;
          return answerReply(call.id, ours('WORKING'));
        },
        SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
        GetTask: () => ({ result: replied ? ours('COMPLETED', { artifacts: { a1: 'booked' } }) : ours('INPUT_REQUIRED', { message: question }) }),
      }), fast);
      await eventually(async () => (await producer.get(id)).openQuestions.length === 1, 'parked on the question', 20_000);
      await producer.reply(id, 'one room');
      const record = await finished(producer, id, 45_000);
      expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
      expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked');
      expect(sends.size).toBe(2);
      expect([...sends.values()]).toEqual([1, 1]);
    }, 60_000);
  }
});

describe('attack 31: a suspect read (a push named another task showing our message) whose GetTask breaks at the HTTP level', () => {
  for (const [name, answer] of [
    ['bytes that are no HTTP', { raw: MALFORMED['a status line that is not HTTP']! }],
    ['a 64 KiB response header', { http: { status: 200, body: '{}', headers: HUGE_HEADERS } }],
  ] as const) {
    it(`GetTask of T2 answered with ${name} every time: a person (AMBIGUOUS) in bounded time, T1 still ours, one SendMessage`, async () => {
      const { agent, push, holding, record } = await pushScene({ redisUrl: h.redisServer().url, keep }, (taskId, received) => holder(taskId, 'WORKING', received), (taskId) => (taskId === 'T2' ? answer : undefined));
      expect(await push(holding('T2'))).toBe(403);
      const row = await eventually(async () => ((await record()).state === 'AMBIGUOUS' ? record() : undefined), 'a person decides', 40_000);
      expect(row.taskId).toBe('T1');
      expect(getTaskCalls(agent, 'T2')).toBeGreaterThanOrEqual(1);
      expect(agent.count('SendMessage')).toBe(1);
    }, 60_000);
  }
});

/*
 * FIXED FINDING (a plain call's answer framed as several SSE events read from its first; kind: an answer is read whole
 * or not at all). Input: crash window 2; ListTasks answered text/event-stream with two events, a page listing nothing
 * then a page listing T1 holding our message. Observed: the first event read as the whole listing, "not found", our
 * message resent (the agent's SendMessage, unscripted here, refused it: FAILED). Expected: never resent. Fixed:
 * `severalEvents` in packages/a2a/src/jsonrpc.ts (an unreadable answer; a SendMessage whose first event is our task
 * is still read from it). Property: packages/a2a/test/stream-frame-refusal-property.test.ts (second describe).
 */
describe('attack 31: a search answered as an event stream whose later frame shows our task', () => {
  it('crash window 2: ListTasks answered text/event-stream, a first frame listing nothing, a second listing T1 holding our message: never resent', async () => {
    let messageId = '';
    const held = () => task('T1', 'COMPLETED', { history: [userOf(messageId)], artifacts: { a1: 'booked' } });
    const agent = await h.agentWith({
      ListTasks: (_params, call) => {
        const frame = (tasks: unknown[]) => `data: ${JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length } })}\n\n`;
        return { http: { status: 200, body: frame([]) + frame([held()]), headers: { 'content-type': 'text/event-stream' } } };
      },
      GetTask: () => ({ result: held() }),
      SubscribeToTask: () => ({ error: { code: -32004, message: 'terminal' } }),
    });
    const { producer, id } = await h.sentNotRecorded(agent, (ours) => (messageId = ours), fast);
    const record = await finished(producer, id, 45_000);
    expect(['AMBIGUOUS', 'COMPLETED']).toContain(record.state);
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);
});
