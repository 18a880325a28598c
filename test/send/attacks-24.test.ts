/**
 * Attack round 24: the rules of the answer-guard / message-answer / question-clock / error-bytes merges, attacked
 * with inputs their own tests do not use. Real redis-server, real fleet, scripted raw JSON-RPC agents (exact bytes).
 * Passing `it`: the product holds; `it.fails`: a finding, with input, observed, expected and suspected location.
 */
import { describe, expect, it } from 'vitest';
import { artifactText, finished, NOT_FOUND, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { agentMessage, ev, task, taskEvent } from '../harness/scripted-agent.ts';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { getTaskCalls, pushScene } from '../harness/push-scene.ts';
import { finishedAttempt, holder, personNaming } from '../harness/holders.ts';
import { statusMessageCut } from '@durable-a2a/shared';

const h = useFieldCases();
const start = h.setUpAndDelegate;
const fast = { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } };
const noTasks = () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } });

describe('attack 24: a Message answer naming a task', () => {
  /*
   * FINDING (another client's result taken for ours; kind: ownership checked on the Message, never on the task it
   * names). Input: SendMessage answers (our request id) an agent Message in OUR context naming task "T9"; GetTask and
   * SubscribeToTask T9 answer a COMPLETED task in context "ctx-other" whose history holds only another client's message
   * ("someone-else"), artifact a1 "their booking". Observed: COMPLETED, taskId T9, the view holding "their booking"
   * as our result (one SendMessage). Expected: the task a Message names is only a claim: a read of it that shows
   * another context and no message of ours disproves it (FOREIGN_TASK, effect maybe: a search by our messageId or a
   * person), never COMPLETED with another client's artifacts. Fault: core/transitions.ts `namedTaskRow` binds the id
   * before any read, and the bound-task reads (transitions.ts `task-read`, the follow's snapshot) check only
   * `task.id === record.taskId` (line ~191, FOREIGN_TASK only on another id), never `taskOwnership` (context/history)
   * as runs/send.ts does for a Task answer: before this session a bound id always came from an ownership-checked Task.
   * Fixed (branch named-task-proof): the row is flagged `namedTaskUnread`; the first full read of T9 is judged by
   * context or history (transitions.ts `namedTaskNotOurs`): not ours, FOREIGN_TASK noted and a person, nothing applied.
   */
  it('the named task is someone else\'s (another context, another message in its history): never COMPLETED with its result (before: COMPLETED with "their booking")', async () => {
    const theirs = () => task('T9', 'COMPLETED', { contextId: 'ctx-other', history: [{ role: 'ROLE_USER', messageId: 'someone-else', parts: [{ text: 'book' }] }], artifacts: { a1: 'their booking' } });
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params) => ({ result: { message: agentMessage('working on it in T9', { taskId: 'T9', contextId: params.message.contextId }) } }),
        GetTask: () => ({ result: theirs() }),
        SubscribeToTask: () => ({ sse: [taskEvent(theirs())] }),
        ListTasks: noTasks,
      }),
      fast,
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.state === 'COMPLETED' && JSON.stringify(await viewOf(p, id)).includes('their booking')).toBe(false);
  }, 45_000);

  /*
   * FINDING (the same fault as above, on the send stream). Input: SendStreamingMessage's only event is an agent Message
   * in our context naming "T9"; GetTask/SubscribeToTask T9 answer the COMPLETED task of another context holding another
   * client's message, artifact "their booking". Observed: COMPLETED with "their booking". Expected: never COMPLETED with
   * another client's result (a search or a person). Fault: as above (transitions.ts `namedTaskRow`, the bound-task
   * reads checking only the id), reached from runs/send-stream.ts through `messageAnswerProof`. Fixed as above.
   */
  it('via a send stream: the named task someone else\'s, never COMPLETED with its result (before: COMPLETED with "their booking")', async () => {
    const theirs = () => task('T9', 'COMPLETED', { contextId: 'ctx-other', history: [{ role: 'ROLE_USER', messageId: 'someone-else', parts: [{ text: 'book' }] }], artifacts: { a1: 'their booking' } });
    const { producer: p, agent, id } = await start(
      () => ({
        SendStreamingMessage: (params) => ({ sse: [ev(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { message: agentMessage('working on it in T9', { taskId: 'T9', contextId: params.message.contextId }) } }))] }),
        GetTask: () => ({ result: theirs() }),
        SubscribeToTask: () => ({ sse: [taskEvent(theirs())] }),
        ListTasks: noTasks,
      }),
      { ...fast, streamingSends: true },
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
    expect(record.state === 'COMPLETED' && JSON.stringify(await viewOf(p, id)).includes('their booking')).toBe(false);
  }, 45_000);

  it('the named task appears late (TaskNotFound twice, then COMPLETED with a1): its result kept, not the Message', async () => {
    // Tried: a lagging task store behind a Message naming T9. Holds if COMPLETED with a1 "booked".
    let message: any;
    const t9 = () => task('T9', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a1: 'booked' } });
    let reads = 0;
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params) => ((message = params.message), { result: { message: agentMessage('queued as T9', { taskId: 'T9', contextId: params.message.contextId }) } }),
        GetTask: () => (++reads <= 2 ? NOT_FOUND : { result: t9() }),
        SubscribeToTask: () => (reads <= 2 ? (reads++, NOT_FOUND) : { sse: [taskEvent(t9())] }),
        ListTasks: noTasks,
      }),
      fast,
    );
    const record = await finished(p, id, 40_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T9' });
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
  }, 60_000);

  /*
   * FINDING (a shown task's loss read as a plain reply; kind: "never read" inferred from the row's shape). Input:
   * SendMessage answers an agent Message "will do, T9" naming T9 in our context; the FIRST read of T9 (GetTask or
   * SubscribeToTask) shows it: SUBMITTED, no status timestamp (optional in the spec), holding our message, its status
   * message an agent Message "queued" naming T9 in our context; every later read answers TaskNotFound (-32001).
   * Observed: COMPLETED, result = the "queued" status message (not even the answer Message), after 3 GetTask + 3
   * SubscribeToTask. Expected: the agent showed T9, so its later denial is a task lost after it existed (the
   * not-found rule: a search by our messageId, LOST or a person), never a success: the rule is "COMPLETED from the
   * Message only if the agent never showed the task". Fault: core/transitions.ts `unreadNamedTask` decides "never
   * read" from the row's shape (SUBMITTED, no statusTimestamp, a status message in our context naming the task); a
   * real read of such a status leaves the same shape (applyStatus-5.lua replaces the status whole), so the task's own
   * status message is taken for the Message answer. A row flag set by `namedTaskRow` and cleared by any applied read
   * would not confuse them. Fixed (branch named-task-proof): `namedTaskUnread`, cleared by applyStatus-5.lua with the
   * read; `unreadNamedTask` reads the flag.
   */
  it('the named task is shown once (SUBMITTED, no timestamp, its own status message), then denied: not COMPLETED (before: COMPLETED from the task\'s "queued")', async () => {
    let message: any;
    let shown = 0;
    const t9 = () => task('T9', 'SUBMITTED', { contextId: message.contextId, history: [message], message: agentMessage('queued', { taskId: 'T9', contextId: message.contextId }) });
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params) => ((message = params.message), { result: { message: agentMessage('will do, T9', { taskId: 'T9', contextId: params.message.contextId }) } }),
        GetTask: () => (shown++ === 0 ? { result: t9() } : NOT_FOUND),
        SubscribeToTask: () => (shown++ === 0 ? { sse: [taskEvent(t9())], endAfter: 'close' as const } : NOT_FOUND),
        ListTasks: noTasks,
      }),
      fast,
    );
    const record = await finished(p, id, 50_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.state).not.toBe('COMPLETED');
  }, 70_000);
});

describe('attack 24: a Message naming a task the agent cannot be asked about', () => {
  it('GetTask and SubscribeToTask answer MethodNotFound (-32601): the attempt ends in bounded calls, one SendMessage', async () => {
    // Tried: a Message-only agent that names a task id but implements neither tasks/get nor tasks/resubscribe (the
    // not-found window never starts). Holds if the attempt finishes (any finished state) within bounded reads.
    const { producer: p, agent, id } = await start(
      () => ({
        SendMessage: (params) => ({ result: { message: agentMessage('done, room 12', { taskId: 'T9', contextId: params.message.contextId }) } }),
        GetTask: () => ({ error: { code: -32601, message: 'Method not found' } }),
        SubscribeToTask: () => ({ error: { code: -32601, message: 'Method not found' } }),
        ListTasks: () => ({ error: { code: -32601, message: 'Method not found' } }),
      }),
      fast,
    );
    const done = async () => {
      const record = await p.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
      return record && !['INTENT', 'SENT', 'SUBMITTED', 'WORKING'].includes(record.state) ? record : undefined;
    };
    await eventually(async () => (await done()) !== undefined || agent.count('GetTask') + agent.count('SubscribeToTask') >= 40, 'finished, or 40 reads', 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(await done()).toBeDefined();
  }, 45_000);
});

describe('attack 24: answers with odd JSON values are processed normally', () => {
  const oddData = '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"x":1}},"dup":1,"dup":2,"big":1e400,"huge":123456789012345678901234567890,"lone":"\\ud800","bidi":"\\u202e\\u0000x"}';
  it('a COMPLETED task whose data part holds __proto__/constructor keys, duplicated keys, 1e400, a lone surrogate, NUL: COMPLETED, one SendMessage', async () => {
    // Tried: values JSON.parse accepts but a naive copy/encode could trip on (prototype keys, Infinity from 1e400, a
    // lone surrogate, NUL and bidi control). Holds if COMPLETED with a1 and never AMBIGUOUS.
    const { producer: p, agent, id } = await start(() => ({
      SendMessage: (params, call) => ({
        http: {
          status: 200,
          body: `{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":{"task":${JSON.stringify(task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: [{ artifactId: 'a1', name: '\u202e\ud800', metadata: JSON.parse('{"__proto__":{"p":1}}'), parts: [{ data: '__D__' }] }] })).replace('"__D__"', oddData)}}}`,
        },
      }),
    }));
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(({} as any).polluted).toBeUndefined();
  }, 45_000);
});

describe('attack 24: agent text journaled unbounded', () => {
  /*
   * FINDING (unbounded stored bytes; kind: B31's, agent text journaled whole beside its bounded excerpt). Input:
   * SendMessage answers a FAILED task (ours) whose status message text is 4 MiB (inside responseBodyBytes). Observed:
   * FAILED with `error.message` cut to 1,000 characters (encodeRecordedError holds), but the row keeps the whole
   * status message as `statusMessage`: the delegation view is 4.2 MB, the workflow view 4.2 MB, the journal row the
   * same, for the record's life (every attempt as much again). Expected: an agent's status message text (a failure's
   * reason, a question) is journaled bounded like the error it duplicates, or counted against a byte budget; the
   * views stay under 1 MiB. Fault: the snapshot/status write (journal applyStatus-5.lua via status-scripts.ts, the
   * `statusMessage` field) stores `status.message` whole; ff987e9 bounded only the error paths. Fixed: every status
   * write bounds the status message first (journal status.ts `withinLimits`, `boundedStatusMessage`: within
   * `statusMessageBytes`, default 64 KiB, an excerpt that says it was cut and `metadata.durableA2a.cut`).
   */
  /** The attempt once finished after SendMessage answered `answer` (one call), checked: its views under 1 MiB and cut. */
  const cutAttempt = async (answer: (params: any) => unknown) => {
    const { producer: p, agent, id } = await start(() => ({ SendMessage: (params) => ({ result: answer(params) }) }));
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    const view = JSON.stringify(await viewOf(p, id));
    expect(view.length).toBeLessThan(1024 * 1024);
    // Kept as an excerpt that says it was cut.
    expect(view).toContain('message cut by durable-a2a');
    return record;
  };

  it('a FAILED task whose status message is 4 MiB of text: the views stay under 1 MiB (observed: 4.2 MB, statusMessage whole)', async () => {
    const record = await cutAttempt((params) => ({ task: task('T1', 'FAILED', { contextId: params.message.contextId, history: [params.message], message: agentMessage('x'.repeat(4 * 1024 * 1024), { taskId: 'T1', contextId: params.message.contextId }) }) }));
    expect(record.state).toBe('FAILED');
    expect(statusMessageCut(record.statusMessage)?.bytes).toBeGreaterThan(4 * 1024 * 1024);
  }, 45_000);

  // The same kind on a Message answer (the step's whole result, `result.message`): before, journaled whole (4.2 MB
  // views). Fixed with the status message's bound (journal status.ts `withinLimits`, `boundedResult`); since edges35
  // a cut result is no COMPLETED (`resultWithinLimit`): AMBIGUOUS LIMIT_EXCEEDED, the excerpt kept for a person.
  it('a Message answer of 4 MiB: AMBIGUOUS LIMIT_EXCEEDED, the views stay under 1 MiB and show it was cut (before: 4.2 MB)', async () => {
    const record = await cutAttempt((params) => ({ message: agentMessage('y'.repeat(4 * 1024 * 1024), { contextId: params.message.contextId }) }));
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'statusMessageBytes' } });
  }, 45_000);
});

describe('attack 24: an agent clock far ahead, three questions', () => {
  /** T1 asks q1, q2, q3 in turn (stamps and messageIds given), then COMPLETED with a1. */
  const threeQuestions = async (key: string, qs: [string, string | undefined, string | undefined][]) => {
    let answers = 0;
    const { producer: p, agent } = await h.setUp((seen: { contextId?: string }) => {
      const now = () => new Date().toISOString();
      const q = ([text, stamp, messageId]: [string, string | undefined, string | undefined]) => {
        const m: any = agentMessage(text, { taskId: 'T1', contextId: seen.contextId });
        if (messageId) m.messageId = messageId;
        else delete m.messageId;
        return task('T1', 'INPUT_REQUIRED', { contextId: seen.contextId, timestamp: stamp ?? now(), message: m });
      };
      const current = () => (answers < qs.length ? q(qs[answers]!) : task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: now(), artifacts: { a1: 'booked' } }));
      return {
        SendMessage: (params: any) => {
          seen.contextId ??= params.message.contextId;
          if (params.message.taskId === 'T1') answers++;
          return { result: { task: { ...current(), history: [params.message] } } };
        },
        GetTask: () => ({ result: current() }),
        SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' as const }),
      };
    }, { ...fast, slowPollMs: 1_000 });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: key });
    const asked = async (text: string) => (await p.questions(id)).some((question) => JSON.stringify(question).includes(text));
    const shown: string[] = [];
    for (const [text] of qs) {
      const readsAt = agent.count('GetTask') + agent.count('SubscribeToTask');
      await eventually(async () => (await asked(text)) || agent.count('GetTask') + agent.count('SubscribeToTask') - readsAt >= 15, `${text} shown, or 15 reads`, 20_000).catch(() => undefined);
      if (!(await asked(text))) break;
      shown.push(text);
      await p.reply(id, `answer to ${text}`);
    }
    const record = shown.length === qs.length ? await finished(p, id, 20_000) : await p.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
    return { shown, record, p, id };
  };
  const ahead = '2099-01-01T00:00:00.000Z';
  const ahead2 = '2099-01-01T00:00:01.000Z';

  it('q1 and q2 stamped 2099 (distinct ids), q3 stamped now: every question shown, COMPLETED after three replies', async () => {
    // Tried: two questions ahead of our clock in a row, then the clock back to now. Holds.
    const { shown, record } = await threeQuestions('v1', [['how many?', ahead, 'q1'], ['which day?', ahead2, 'q2'], ['which room?', undefined, 'q3']]);
    expect(shown).toEqual(['how many?', 'which day?', 'which room?']);
    expect(record!.state).toBe('COMPLETED');
  }, 70_000);

  it('q1 now, q2 2099, q3 now (the clock jumps forward then back): every question shown, COMPLETED', async () => {
    // Tried: a far-ahead stamp in the middle stretch only. Holds (the floor does not hide q3, a new key after our reply).
    const { shown, record } = await threeQuestions('v4', [['how many?', undefined, 'q1'], ['which day?', ahead, 'q2'], ['which room?', undefined, 'q3']]);
    expect(shown).toEqual(['how many?', 'which day?', 'which room?']);
    expect(record!.state).toBe('COMPLETED');
  }, 70_000);
  // Also tried (not kept: an invalid Message, the spec requires messageId): q2/q3 without messageId, stamped at every
  // read: the row shows a question keyed by its timestamp with empty text (the status message dropped), and every read
  // is a new key; not a finding of these rules, noted in the report.
});

describe('attack 24: a push suspect on a row that finishes meanwhile', () => {
  const redisServer = useRedisServer();
  const keep = closeKeptAfterEach();
  /*
   * FINDING (evidence dropped unread; kind: a finished row skips its pending suspects). Input: the push scene (T1 bound,
   * WORKING, push on); the agent pushes a Task T2 whose history holds our messageId (refused 403, kept as a pending
   * suspect), then at once pushes T1 COMPLETED with its artifact (applied: the row settles COMPLETED before the
   * reconciler's suspect job runs); GetTask T2 would show T2 WORKING holding our message (a second task doing our work).
   * Observed: the row COMPLETED on T1 with `suspects` still pending in it, suspectsLost 0, and 0 GetTask T2 in 10 s:
   * the second holder is never read, nobody is told. Expected: evidence that another task holds our message is never
   * dropped unread (suspect-evidence-never-dropped): the pending suspects of a row that finishes are still read, and a
   * confirmed second holder goes to a person (AMBIGUOUS naming T1 and T2, as on an unfinished row) or at least is
   * recorded beside the COMPLETED result. Fault: workers/src/delegation/runs/reconcile.ts `reconcileOne`: `if
   * (isFinished(record.state)) { apply row-checked; return 'settled' }` runs before `reconcileSuspects`, so a job
   * enqueued for a suspect of a row that has finished meanwhile reads nothing. Fixed: a finished row's pending
   * suspects are read before its workflow decides (settle.ts waits while any is pending, finishStep-5.lua refuses the
   * one-step finish; reconcile.ts reads them, runs/finished-suspects.ts); a holder is noted on the row
   * (noteDuplicateTask-1.lua: `protocolError` DUPLICATE_TASK naming both tasks), the state COMPLETED unchanged.
   */
  it('T2 (holding our message) pushed, then T1 pushed COMPLETED at once: T2 is read (observed: 0 GetTask T2, suspects left pending on the COMPLETED row)', async () => {
    let t1Done = false;
    const { env, workflowId, agent, push, holding, record } = await pushScene({ redisUrl: redisServer().url, keep }, (taskId, received) =>
      taskId === 'T1' ? holder('T1', t1Done ? 'COMPLETED' : 'WORKING', received) : holder(taskId, 'WORKING', received),
    );
    expect(await push(holding('T2'))).toBe(403);
    t1Done = true;
    const r = (await record()) as any;
    await push({ task: holder('T1', 'COMPLETED', { messageId: r.messageId, contextId: r.contextId ?? r.requestedContextId }) });
    const row = await finishedAttempt(env.producer, workflowId, 30_000);
    await eventually(async () => getTaskCalls(agent, 'T2') > 0 || ((await record()) as any).state === 'AMBIGUOUS', 'T2 read', 10_000).catch(() => undefined);
    expect(getTaskCalls(agent, 'T2')).toBeGreaterThan(0);
    expect(['COMPLETED', 'AMBIGUOUS']).toContain(row.state);
    // The finished state stands; the second holder is noted beside it, naming both tasks; then the workflow settles.
    const noted = await eventually(async () => {
      const current = await env.producer.journal.getDelegation({ workflowId, delegationId: 'main.1' });
      return current?.protocolError?.code === 'DUPLICATE_TASK' ? current : undefined;
    }, 'the duplicate noted', 20_000);
    expect(noted.state).toBe('COMPLETED');
    expect(noted.protocolError!.message).toMatch(/T2.*T1/);
    await eventually(async () => (await env.producer.get(workflowId)).state === 'COMPLETED', 'the workflow COMPLETED', 20_000);
  }, 60_000);
});

describe('attack 24: decoys mixed with a real holder', () => {
  const redisServer = useRedisServer();
  const keep = closeKeptAfterEach();
  it('20 decoys pushed in one burst with the holder T2 12th (past the first job\'s 8 reads): T2 read, AMBIGUOUS naming T1 and T2', async () => {
    // Tried: a real second holder hidden in a burst of decoys (tasks whose GetTask shows someone else's message), past
    // one job's reads, under the queue's 32. Holds if T2 is read and the person is told of T1 and T2.
    const { env, workflowId, agent, push, holding } = await pushScene({ redisUrl: redisServer().url, keep }, (taskId, received) =>
      taskId === 'T1' || taskId === 'T2' ? holder(taskId, 'WORKING', received) : holder(taskId, 'WORKING', { ...received, messageId: 'M-other' }),
    );
    for (let n = 0; n < 20; n++) expect(await push(holding(n === 11 ? 'T2' : `D${n}`))).toBe(403);
    await personNaming(env.producer, workflowId, ['T1', 'T2'], 40_000);
    expect(getTaskCalls(agent, 'T2')).toBeGreaterThan(0);
  }, 60_000);
});

describe('attack 24: a stream ending at AUTH_REQUIRED', () => {
  it('the agent shows AUTH_REQUIRED for 3 s (each subscription closes at the snapshot), then COMPLETED: bounded reads, COMPLETED with a1', async () => {
    // Tried: the resubscribe rule's other interrupted state (AUTH_REQUIRED, no question of ours, no reply to send): a
    // stream closed at it must park or back off, not resubscribe at once. Holds if <= 30 reads over the 3 s.
    let startedAt = 0;
    const { producer: p, agent } = await h.setUp((seen: { contextId?: string }) => {
      const current = () =>
        Date.now() - startedAt < 3_000
          ? task('T1', 'AUTH_REQUIRED', { contextId: seen.contextId, timestamp: new Date(startedAt).toISOString(), message: agentMessage('sign in at https://example.test/auth', { messageId: 'auth1', taskId: 'T1', contextId: seen.contextId }) })
          : task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: new Date().toISOString(), artifacts: { a1: 'booked' } });
      return {
        SendMessage: (params: any) => {
          seen.contextId ??= params.message.contextId;
          startedAt ||= Date.now();
          return { result: { task: { ...current(), history: [params.message] } } };
        },
        GetTask: () => ({ result: current() }),
        SubscribeToTask: () => ({ sse: [taskEvent(current())], endAfter: 'close' as const }),
      };
    }, { slowPollMs: 1_000 });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'auth-required-stream-end' });
    const record = await finished(p, id, 60_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
    expect(agent.count('SubscribeToTask') + agent.count('GetTask')).toBeLessThanOrEqual(30);
  }, 90_000);
});
