/**
 * Attack round 23: what an answer proves (delivery, ownership, effect) at the edges no earlier test used. Real
 * redis-server, real fleet, scripted raw JSON-RPC agents (exact bytes). Passing `it`: the product holds; `it.fails`:
 * a finding, with the input, the observed and expected outcome and the suspected code location in its comment.
 */
import { describe, expect, it } from 'vitest';
import { artifactText, finished, useFieldCases, viewOf, workflowSettled } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { agentMessage, ev, task, taskEvent, type ScriptedAnswer, type ScriptedCall } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const start = h.setUpAndDelegate;

/** A JSON value nested `depth` levels deep (arrays), as JSON text. */
const nested = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

/** A raw JSON-RPC success body for `call` whose `result` is `resultJson` (text), preceded by `pad`. */
const rawResult = (call: ScriptedCall, resultJson: string, pad = '') => ({
  http: { status: 200, body: `${pad}{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":${resultJson}}` },
});

/** A COMPLETED task holding our message, whose artifact carries a data part `dataJson` (text). */
const completedWithData = (params: any, dataJson: string) =>
  JSON.stringify({ task: task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: [{ artifactId: 'a1', parts: [{ data: '__DATA__' }] }] }) }).replace('"__DATA__"', dataJson);

describe('attack 23: the jsonDepth limit of a non-stream answer', () => {
  it('control: a SendMessage answer nested 100 deep (limit 64): a person decides (LIMIT_EXCEEDED), one SendMessage', async () => {
    // Tried: the A31 depth variant in a data part, with no padding. Holds: AMBIGUOUS LIMIT_EXCEEDED jsonDepth.
    const { producer: p, agent, id } = await start(() => ({ SendMessage: (params, call) => rawResult(call, completedWithData(params, nested(100))) }));
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'jsonDepth' });
    expect(agent.count('SendMessage')).toBe(1);
  }, 45_000);

  /*
   * FINDING (limit bypass, kind: a limit checked on a guess of the body's shape). Input: the same answer as the control,
   * preceded by 64 spaces (JSON allows any leading whitespace; `parseJsonText` strips it). Observed: the depth check is
   * skipped and the answer is accepted: COMPLETED with the 100-deep data part stored and shown. Expected: as the
   * control, AMBIGUOUS LIMIT_EXCEEDED (jsonDepth); every answer is held to jsonDepth whatever its leading bytes.
   * Fault: packages/a2a/src/http.ts `looksLikeJson` tests only `text.slice(0, 64)` for `^[\s\x1e]*[[{]`, so a body
   * whose first structural character is past byte 64 is not checked (`request()` line `if (looksLikeJson(bodyText))
   * checkJsonDepth(...)`), while `response.ts parseJsonText` strips any amount of leading whitespace and parses it.
   * The guard and the parser disagree on what "JSON" is; the check should run on what the parser will parse.
   * Fixed: `http.ts` checks the whole text of every body (packages/a2a/test/answer-guard.test.ts, the padding property).
   */
  it('a SendMessage answer nested 100 deep behind 64 leading spaces: still LIMIT_EXCEEDED (observed: COMPLETED, the limit skipped)', async () => {
    const { producer: p, agent, id } = await start(() => ({ SendMessage: (params, call) => rawResult(call, completedWithData(params, nested(100)), ' '.repeat(64)) }));
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'jsonDepth' });
  }, 45_000);

  /** The COMPLETED task holding our message (`message`) whose data part is nested 5,000 deep, behind 64 spaces. */
  const deepTask = (message: any) => task('T1', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: [{ artifactId: 'a1', parts: [{ data: '__DATA__' }] }] });
  const deepTaskJson = (message: any) => JSON.stringify(deepTask(message)).replace('"__DATA__"', nested(5_000));
  const pad = ' '.repeat(64);

  /*
   * FINDING (delivery lost, work done six times; kind: an error outside the A2A error model thrown after the answer
   * arrived). Input: every SendMessage is answered (HTTP 200, our request id) with a COMPLETED task holding our
   * message whose data part is nested 5,000 deep, behind 64 leading spaces (so the depth check is skipped, finding
   * above); ListTasks lists nothing (an agent that does not list, or trims history: spec §3.7). Observed: JSON.stringify
   * of the answer throws RangeError "Maximum call stack size exceeded" (logged "job failed"); nothing is journaled
   * about the answer (no error, no delivery: the row stays INTENT with only its send mark), the reconciler reads the
   * mark as "maybe sent", the empty search as absence, and resends: 6 SendMessage for one messageId (6 bookings), then
   * FAILED SEND_ATTEMPTS_EXHAUSTED "SendMessage created no task" (retryable: a workflow re-delegates it). Expected: one
   * SendMessage; the answer arrived (delivery received, effect maybe): AMBIGUOUS LIMIT_EXCEEDED for a person, as the
   * control. Fault: beyond the depth bypass (http.ts `looksLikeJson`), runs/send.ts `requestHeld`/`applyHeldResult`
   * only turn A2A errors into observations: a non-A2A throw after the request left (here in the journal's write of
   * the answer, `apply.ts`) escapes the job with the answer's delivery unrecorded, so `send-in-doubt` and the search
   * decide as if nothing had come back; `send-failure.ts sendFailureObservation` would also read a RangeError as
   * retryable-unknown. Any answer that arrived must leave `delivery: received` in the journal before anything can throw.
   * Fixed: `apply.ts` applies a runtime fault on an answer as its failure (`unprocessedAnswer`; test/send/answer-guard.test.ts).
   */
  it('a 5,000-deep answer behind 64 spaces, the agent listing nothing: one SendMessage, a person decides (observed: 6 SendMessage, FAILED)', async () => {
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params, call) => rawResult(call, `{"task":${deepTaskJson(params.message)}}`, pad),
        ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
      }),
      { reconcileIntervalMs: 300 },
    );
    const record = await finished(p, id, 40_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.state).toBe('AMBIGUOUS');
  }, 60_000);

  /*
   * FINDING (stuck for ever, unbounded calls; same kind as above). Input: as above, but an honest agent: ListTasks lists
   * T1 (a summary holding our message, no artifacts) and GetTask answers the same 5,000-deep task behind 64 spaces.
   * Observed: every reconcile run adopts T1 from the listing, reads it with GetTask, and throws RangeError ("reconcile
   * in a batch failed; retrying as a job of its own"): the row stays INTENT with no error for as long as we watch, 30
   * ListTasks + 30 GetTask within seconds, no bound (the progress rule never sees the failure: no `read-failed`
   * observation is made). Expected: the read's failure counted (`read-failed` unacceptable, LIMIT_EXCEEDED) and the
   * attempt at a person in bounded calls (A32). Fault: io/read.ts `readTask` / `readFailure` rethrow what is not an
   * A2AError ("programming errors") and runs/reconcile.ts lets it fail the job; an answer the worker cannot process is
   * an agent's fault and must become an observation, not an exception retried for ever.
   * Fixed: as above; the read's failure is a counted `read-failed` (test/send/answer-guard.test.ts, the read-path case).
   */
  it('the honest variant (ListTasks lists T1, GetTask answers the deep task): the attempt ends in bounded calls (observed: INTENT for ever, ListTasks+GetTask unbounded)', async () => {
    let message: any;
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params, call) => ((message = params.message), rawResult(call, `{"task":${deepTaskJson(message)}}`, pad)),
        ListTasks: () => ({ result: { tasks: [task('T1', 'COMPLETED', { contextId: message.contextId, history: [message] })], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
        GetTask: (_params, call) => rawResult(call, deepTaskJson(message), pad),
        SubscribeToTask: () => ({ error: { code: -32004, message: 'task is terminal' } }),
      }),
      { reconcileIntervalMs: 300 },
    );
    const done = async () => {
      const record = await p.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
      return record && !['INTENT', 'SENT', 'SUBMITTED', 'WORKING'].includes(record.state) ? record : undefined;
    };
    await eventually(async () => (await done()) !== undefined || agent.count('GetTask') >= 30, 'finished, or 30 GetTask', 45_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(await done()).toMatchObject({ state: 'AMBIGUOUS' });
  }, 60_000);
});

describe('attack 23: a direct Message answer that is not a plain reply', () => {
  /*
   * FINDING (lost result; kind: a fact in the answer not read: a Message's `taskId`). Input: SendMessage answers a
   * Message (role ROLE_AGENT, our context, our request id) `{"taskId":"T9","parts":[{"text":"working on it in T9"}]}`:
   * the agent's reply belongs to task T9 (spec §5.5 Message.taskId), which holds our message and is WORKING; GetTask T9
   * answers WORKING twice, then COMPLETED with artifact a1 "booked". Observed: COMPLETED at once from the interim
   * message, no taskId journaled, 0 GetTask, 0 SubscribeToTask, no artifact: T9's result is lost (and a FAILED T9 would
   * read as success). Expected: a Message naming a task proves a task exists: the task is read (GetTask) and followed;
   * COMPLETED with T9 and a1 "booked". Fault: core/transitions.ts `send-answered` completes on any `'message' in answer`
   * ("A direct Message reply completes the delegation") and runs/send.ts `answerObservation` gives every Message
   * `proven by request-id` without reading its `taskId` (nor its context or role); the Message's own facts are dropped.
   * Fixed: `messageAnswerProof` (core/observation.ts) names the task; the row binds it and the follow reads it.
   */
  it('a Message naming task T9 (WORKING, then COMPLETED with a1): T9 followed, its result kept (observed: COMPLETED from the interim message, a1 lost)', async () => {
    let message: any;
    const t9 = (state: string) => task('T9', state, { contextId: message.contextId, history: [message], ...(state === 'COMPLETED' ? { artifacts: { a1: 'booked' } } : {}) });
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params) => ((message = params.message), { result: { message: agentMessage('working on it in T9', { taskId: 'T9', contextId: params.message.contextId }) } }),
        GetTask: (_params, call) => ({ result: t9(call.count < 3 ? 'WORKING' : 'COMPLETED') }),
        SubscribeToTask: () => ({ sse: [taskEvent(t9('COMPLETED'))] }),
      }),
      { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } },
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T9' });
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
  }, 45_000);

  /*
   * FINDING (ownership not checked; kind: as above). Input: SendMessage answers, with our request id, a Message in
   * ANOTHER context ("ctx-of-someone-else") naming another client's task "T-OTHER", text "your booking is cancelled".
   * Observed: COMPLETED with that text as our result, contextId "ctx-of-someone-else" journaled as ours. Expected:
   * a Message whose context is not ours and that names a task not proven ours is not our result: the answer is no
   * proof of effect either way (delivery received, effect maybe): a search by our messageId or a person, never
   * COMPLETED from it. (With "id": null the same answer is refused by the content proof: test/send/answer-attacks.)
   * Fault: runs/send.ts `answerObservation` checks ownership for a Task (`taskOwnership`: context, then history) but
   * not for a Message; transitions.ts then writes the foreign context with the outcome.
   * Fixed: `messageAnswerProof` disproves it (another context, no history to show our messageId): the search decides.
   */
  it('a Message in another context naming another task: never COMPLETED from it (observed: COMPLETED, the foreign context journaled)', async () => {
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: () => ({ result: { message: agentMessage('your booking is cancelled', { taskId: 'T-OTHER', contextId: 'ctx-of-someone-else' }) } }),
        ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }),
      }),
      { reconcileIntervalMs: 300 },
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.state).not.toBe('COMPLETED');
  }, 45_000);
});

describe('attack 23: an agent clock far ahead, on a task that asks twice', () => {
  /**
   * T1 asks q1 ("how many?", status stamped `q1Stamp`); our answer moves it WORKING, then it asks q2 ("which day?",
   * stamped now); the second answer completes it with a1 "booked". Every status is what GetTask, SubscribeToTask and
   * the reply's answer show.
   */
  const asksTwice = (q1Stamp: string) => (seen: { contextId?: string }) => {
    let answers = 0;
    const now = () => new Date().toISOString();
    const current = () =>
      answers === 0
        ? task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: q1Stamp, message: agentMessage('how many?', { messageId: 'q1', taskId: 'T1', contextId: seen.contextId }) })
        : answers === 1
          ? task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: now(), message: agentMessage('which day?', { messageId: 'q2', taskId: 'T1', contextId: seen.contextId }) })
          : task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: now(), artifacts: { a1: 'booked' } });
    return {
      SendMessage: (params: any) => {
        seen.contextId ??= params.message.contextId;
        if (params.message.taskId === 'T1') answers++;
        return { result: { task: { ...current(), history: [params.message] } } };
      },
      GetTask: () => ({ result: current() }),
      SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' as const }),
    };
  };

  const run = async (q1Stamp: string) => {
    const { producer: p, agent } = await h.setUp(asksTwice(q1Stamp), { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: `asks-twice-${q1Stamp.slice(0, 4)}` });
    const asked = async (text: string) => (await p.questions(id)).some((question) => JSON.stringify(question).includes(text));
    await eventually(() => asked('how many?'), 'q1 shown', 15_000);
    await p.reply(id, 'six people');
    // Bounded: q2 shown, or the agent read 20 times after our answer without it.
    const readsAt = agent.count('GetTask') + agent.count('SubscribeToTask');
    await eventually(async () => (await asked('which day?')) || agent.count('GetTask') + agent.count('SubscribeToTask') - readsAt >= 20, 'q2 shown, or 20 reads', 60_000);
    return { p, agent, id, q2Shown: await asked('which day?') };
  };

  it('control: q1 stamped now: the second question is shown, answered, COMPLETED with a1', async () => {
    // Tried: the two-question flow with honest clocks. Holds.
    const { p, id, q2Shown } = await run(new Date().toISOString());
    expect(q2Shown).toBe(true);
    await p.reply(id, 'Monday');
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
  }, 90_000);

  /*
   * FINDING (stuck for ever, the agent's question hidden, the agent hammered; kind: an agent's clock used as an
   * authority across questions). Input: as the control, but q1's status is stamped "2099-01-01T00:00:00.000Z" (an agent
   * clock far ahead, or a typo); every later status is stamped now. Observed: after our answer to q1 the agent's new
   * question q2 (another messageId, another text) is dropped as 'stale' (older than 2099, same rank): q2 is never shown
   * (p.questions() is empty: q1 answered, nothing open), the row stays INPUT_REQUIRED on q1 with its reply sent,
   * noProgressCount 0 and no error, and the follow resubscribes ~50 times a second without end (504 SubscribeToTask in
   * 10 s: the loop of the next finding, never counted as no progress, so nothing ever ends it). Expected: a new question
   * (another status message id, asked after our reply was delivered) is a new observation whatever its timestamp:
   * shown and answerable; COMPLETED after its answer.
   * Fault: packages/shared/src/journal/lua/applyStatus-5.lua: `if RANK[incoming] == RANK[current] and currentTs and
   * incomingTs and incomingTs < currentTs then return {0, 'stale'}` runs before the "a new message replaces the status
   * whole" rule, so one far-future stamp freezes the row's rank-2 state (WORKING/INPUT_REQUIRED/AUTH_REQUIRED) for the
   * rest of the task; our own reply (a local, ordered event) does not reset the agent-clock baseline.
   * Fixed: a question under a key never asked, after our reply was delivered, is new whatever its stamp; the earlier
   * stretch's stamp becomes a floor for replays (applyStatus-5.lua; property: test/journal/question-clock.test.ts).
   */
  it('q1 stamped 2099: the second question is shown (was: dropped as stale, hidden, the row stuck on q1)', async () => {
    const { q2Shown } = await run('2099-01-01T00:00:00.000Z');
    expect(q2Shown).toBe(true);
  }, 90_000);

  /*
   * FINDING (hot loop, unbounded requests; kind: a row that routes to an immediate follow from a state the follow
   * cannot change). Input: honest clocks; T1 asks q1; after our answer the agent keeps showing INPUT_REQUIRED q1 (same
   * status, same timestamp) for 3 s of its own processing, then COMPLETED; every SubscribeToTask sends the snapshot and
   * closes at the interrupted state (as the 1.3.0 SDK does, spec §11.7). Observed: ~130 SubscribeToTask in those 3 s
   * (a new subscription as soon as the last one closes, no backoff, never counted as "no progress"); it ends only
   * because the agent moves on (with a far-ahead clock, above, it never ends). Expected: a stream that ends at a
   * question we have already answered is followed with the follow backoff and the progress rule, like any stream that
   * ends before a finished state: a handful of requests in 3 s. Fault: core/transitions.ts `stream-ended`:
   * `if (observation.how === 'interrupted' && (record.state === 'INPUT_REQUIRED' || ...)) return { next: route }`
   * assumes the route parks (a question open), but `policy.ts routeOf`/`questionOpen` is false once our reply is
   * `sent`, so the route is `follow` with an empty plan: immediate, uncounted, for as long as the agent shows the
   * answered question.
   * Fixed: only a stream ended at an OPEN question routes (parks); any other end before a finished state is one read
   * and the progress rule (property: packages/workers/test/stream-end-backoff-property.test.ts).
   */
  it('the agent shows the answered question for 3 s: the follow backs off (was: ~130 SubscribeToTask in 3 s)', async () => {
    let answeredAt = 0;
    const stamp = new Date().toISOString();
    const { producer: p, agent } = await h.setUp((seen) => {
      const current = () =>
        answeredAt === 0 || Date.now() - answeredAt < 3_000
          ? task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: stamp, message: agentMessage('how many?', { messageId: 'q1', taskId: 'T1', contextId: seen.contextId }) })
          : task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: new Date().toISOString(), artifacts: { a1: 'booked' } });
      return {
        SendMessage: (params: any) => {
          seen.contextId ??= params.message.contextId;
          if (params.message.taskId === 'T1') answeredAt = Date.now();
          return { result: { task: { ...current(), history: [params.message] } } };
        },
        GetTask: () => ({ result: current() }),
        SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' as const }),
      };
      // The harness's backoff cap (500 ms) reaches slow polling within a second; at its default period (60 s) the
      // COMPLETED after 3 s would be read past this test's bounds.
    }, { slowPollMs: 1_000 });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'slow-to-take-the-answer' });
    await eventually(async () => (await p.questions(id)).length > 0, 'q1 shown', 15_000);
    const readsBefore = agent.count('SubscribeToTask') + agent.count('GetTask');
    await p.reply(id, 'six people');
    const record = await finished(p, id, 60_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
    expect(agent.count('SubscribeToTask') + agent.count('GetTask') - readsBefore).toBeLessThanOrEqual(30);
  }, 90_000);
});

describe('attack 23: bytes an error answer brings', () => {
  /*
   * FIXED (ff987e9: encodeRecordedError, the client's excerpt of an agent's error message; test/send/error-text-bytes.test.ts).
   * FINDING (unbounded stored bytes; kind: text from an agent journaled without a byte bound, B31's kind). Input:
   * SendMessage answers JSON-RPC -32603 (effect maybe) whose `message` is 8 MiB of text (inside responseBodyBytes);
   * ListTasks lists T1 holding our message, GetTask reads it COMPLETED with a1. Observed: COMPLETED with one
   * SendMessage (the delivery/effect reading holds), but the attempt keeps the whole 8 MiB message as its `error`
   * after it COMPLETED: the delegation view is 8.4 MB and the workflow view 16.8 MB (the text twice), in Redis for the
   * record's life; every attempt and every round of such an answer adds as much. Expected: an agent's error text is
   * journaled as a bounded excerpt (as `bodyExcerpt` is: 500 characters), and counted against a byte budget; the
   * views stay small. Fault: workers/src/delegation/io/send-errors.ts `recordedErrorOf` (`message: error.message`) and
   * a2a/src/error-mapping.ts `errorFromJsonRpc` (the agent's `message` whole into the error's message); read.ts
   * `readFailure` journals `(error as Error).message` the same way.
   */
  it('a -32603 whose message is 8 MiB, then the task found COMPLETED: the views stay under 1 MiB (before ff987e9: 8.4 MB and 16.8 MB)', async () => {
    let message: any;
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params) => ((message = params.message), { error: { code: -32603, message: 'x'.repeat(8 * 1024 * 1024) } }),
        ListTasks: () => ({ result: { tasks: [task('T1', 'COMPLETED', { contextId: message.contextId, history: [message] })], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a1: 'booked' } }) }),
      }),
      { reconcileIntervalMs: 300 },
    );
    const record = await finished(p, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
    expect(JSON.stringify(await viewOf(p, id)).length).toBeLessThan(1024 * 1024);
    expect(JSON.stringify(await p.get(id)).length).toBeLessThan(1024 * 1024);
  }, 45_000);
});

describe('attack 23: JSON-RPC error codes outside the spec, after the agent acted', () => {
  /** Handlers of an agent that books (records our message, lists and reads its COMPLETED task T1) and answers `answer`. */
  const bookingThenAnswering = (answer: ScriptedAnswer, bookings: string[]) => {
    let message: any;
    return {
      SendMessage: (params: any) => ((message = params.message), bookings.push(params.message.messageId), answer),
      ListTasks: (params: any) => ({ result: { tasks: message ? [task('T1', 'COMPLETED', { contextId: params.contextId ?? message.contextId, history: [message] })] : [], nextPageToken: '', pageSize: 50, totalSize: message ? 1 : 0 } }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a1: 'booked' } }) }),
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a1: 'booked' } }))] }),
    };
  };

  const held: [string, ScriptedAnswer][] = [
    ['code 1 (positive, no meaning)', { error: { code: 1, message: 'backend said no' } }],
    ['-32603 whose ErrorInfo says INVALID_PARAMS (the code wins)', { error: { code: -32603, message: 'x', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INVALID_PARAMS', domain: 'a2a-protocol.org' }] } }],
    ['HTTP 202 with an empty body', { http: { status: 202, body: '' } }],
    ['HTTP 204', { http: { status: 204, body: '' } }],
  ];
  for (const [name, answer] of held) {
    it(`${name} after booking: searched, the task adopted: COMPLETED with a1, one SendMessage`, async () => {
      // Tried: answers proving nothing either way after the agent acted. Holds: effect maybe, the search adopts T1.
      const bookings: string[] = [];
      const { producer: p, agent, id } = await start(() => bookingThenAnswering(answer, bookings), { reconcileIntervalMs: 300 });
      const record = await finished(p, id, 30_000);
      expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
      expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
      expect(agent.count('SendMessage')).toBe(1);
    }, 45_000);
  }

  /*
   * FINDING (done twice; kind: a code outside the JSON-RPC/A2A ranges read as an A2A refusal, "nothing created").
   * Input: workflow {maxAttemptsPerStep: 2, one step by skill}, two agents with the skill; each books, then answers
   * SendMessage (HTTP 200, our request id) with a JSON-RPC error whose code is outside the spec: 404 or 400 (an HTTP
   * status in `code`), or -32050 (implementation-defined server error) with ErrorInfo reason TASK_NOT_FOUND although our
   * message named no task. Each lists and reads T1 COMPLETED. Observed: hotel.1 FAILED at once (TASK_NOT_FOUND /
   * INVALID_REQUEST, "delivery received", no search), hotel.2 sent to the second agent: two bookings. The same agent
   * answering code 1 (tests above) is searched and COMPLETED. Expected: a code the spec does not define for SendMessage
   * proves delivery, not absence of effect: effect maybe, the search adopts T1; one booking, COMPLETED.
   * Fault: packages/a2a/src/error-mapping.ts `errorFromJsonRpc` maps `code >= 100 && code <= 599` through
   * `errorClassForHttpStatus` (so 404 → TaskNotFoundError, 400 → InvalidRequestError, 415 → ContentTypeNotSupported)
   * and a reason over an unknown code through `errorClassForReason`; errors.ts `sendEffectOf` then reads those classes
   * as refusals (`refusals`, effect none). Only the spec's own codes for a request error are proof of "not created";
   * the HTTP-status-in-code rule (R08 c) was meant for 5xx (transient, effect maybe).
   */
  const refusedTooReadily: [string, ScriptedAnswer][] = [
    ['code 404', { error: { code: 404, message: 'Not Found' } }],
    ['code 400', { error: { code: 400, message: 'Bad Request' } }],
    ['-32050 with reason TASK_NOT_FOUND', { error: { code: -32050, message: 'downstream lookup failed', data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }] } }],
  ];
  for (const [name, answer] of refusedTooReadily) {
    it(`${name} after booking, two agents: one booking, COMPLETED (before: FAILED without a search, re-delegated, two bookings)`, async () => {
      const prefix = h.newPrefix();
      const bookings: string[] = [];
      const first = await h.agentWith(bookingThenAnswering(answer, bookings));
      const second = await h.agentWith(bookingThenAnswering(answer, bookings));
      const producer = h.producer(prefix);
      await producer.registerAgent(first.cardUrl);
      await producer.registerAgent(second.cardUrl);
      await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
      const workflowId = `code-${prefix}`;
      await producer.startWorkflow({ workflowId, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book' } }] });
      const view = await workflowSettled(producer, workflowId, 30_000);
      expect(bookings).toHaveLength(1);
      expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED' });
    }, 45_000);
  }

  /*
   * FINDING (half-done saga; the same kind as above, seen from the workflow). Input: workflow [hotel (agent H,
   * compensation "Cancel the hotel" to agent U), flight (agent F)], maxAttemptsPerStep 1; H books and answers T1
   * COMPLETED; F books the flight, then answers SendMessage with JSON-RPC code 404, and lists/reads its T1 COMPLETED.
   * Observed: flight.1 FAILED TASK_NOT_FOUND without a search, the workflow compensates the hotel (U gets the undo) and
   * ends COMPENSATED while the flight stays booked and is never compensated (it "created nothing"). Expected: the flight
   * adopted (effect maybe, found by our messageId): workflow COMPLETED, no undo sent. Fault: as above
   * (error-mapping.ts `errorFromJsonRpc` HTTP-status-in-code rule → errors.ts `sendEffectOf` none).
   */
  it('a saga whose second step books and answers code 404: COMPLETED, no undo (before: COMPENSATED, the flight left booked)', async () => {
    const prefix = h.newPrefix();
    const flights: string[] = [];
    const hotel = await h.agentWith({ SendMessage: (params) => ({ result: { task: task('H1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'hotel booked' } }) } }) });
    const undo = await h.agentWith({ SendMessage: (params) => ({ result: { task: task('U1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message] }) } }) });
    const flight = await h.agentWith(bookingThenAnswering({ error: { code: 404, message: 'Not Found' } }, flights));
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, { reconcileIntervalMs: 300 });
    const workflowId = `saga-${prefix}`;
    await producer.startWorkflow({
      workflowId,
      steps: [
        { name: 'hotel', agent: hotel.cardUrl, message: { text: 'Book the hotel' }, compensation: { agent: undo.cardUrl, message: { text: 'Cancel the hotel' } } },
        { name: 'flight', agent: flight.cardUrl, message: { text: 'Book the flight' } },
      ],
    });
    const done = ['COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED', 'NEEDS_ATTENTION'];
    const view = await eventually(async () => {
      const current = await producer.get(workflowId);
      return done.includes(current.state) && current;
    }, 'the workflow finished', 30_000);
    expect(flights).toHaveLength(1);
    expect(view.state).toBe('COMPLETED');
    expect(undo.count('SendMessage')).toBe(0);
  }, 45_000);
});

describe('attack 23: a streaming send whose events name no task', () => {
  const frame = (result: unknown) => ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result }));
  it('events with taskId "" (an artifact and a FAILED status) between our task\'s events: never applied; COMPLETED with our a2, one send', async () => {
    // Tried: SendStreamingMessage opens T1 WORKING, then an artifactUpdate and a statusUpdate FAILED whose taskId is ""
    // (our context), then T1's own a2 and COMPLETED. Holds: the nameless events are refused (one GetTask decides),
    // the result is T1's a2, EMPTY-ID is never stored, FAILED never journaled.
    let message: any;
    const ours = () => task('T1', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a2: 'real' } });
    const { producer: p, agent, id } = await start(
      () => ({
        SendStreamingMessage: (params) => {
          message = params.message;
          const contextId = message.contextId;
          return {
            sse: [
              frame({ task: task('T1', 'WORKING', { contextId, history: [message] }) }),
              frame({ artifactUpdate: { taskId: '', contextId, artifact: { artifactId: 'a1', parts: [{ text: 'EMPTY-ID' }] }, lastChunk: true } }),
              frame({ statusUpdate: { taskId: '', contextId, status: { state: 'TASK_STATE_FAILED' } } }),
              frame({ artifactUpdate: { taskId: 'T1', contextId, artifact: { artifactId: 'a2', parts: [{ text: 'real' }] }, lastChunk: true } }),
              frame({ statusUpdate: { taskId: 'T1', contextId, status: { state: 'TASK_STATE_COMPLETED' } } }),
            ],
          };
        },
        GetTask: () => ({ result: ours() }),
        SubscribeToTask: () => ({ sse: [taskEvent(ours())] }),
      }),
      { streamingSends: true, reconcileIntervalMs: 300 },
    );
    const record = await finished(p, id, 30_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    const view = await viewOf(p, id);
    expect(view.artifacts.map((artifact) => artifact.artifactId)).toEqual(['a2']);
    expect(JSON.stringify(view)).not.toContain('EMPTY-ID');
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
  }, 45_000);
});
