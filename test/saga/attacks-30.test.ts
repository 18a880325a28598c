/**
 * Attack round 30: inputs of the field-report kinds (../shared/cases/field-reports-3.md) on paths the earlier rounds
 * left alone: limits and summaries on the reconciler's, the LOST check's, the cancel's and a first snapshot's reads, an
 * Agent Card moved to another binding before the reconcile, JSON-RPC ids of the wrong type,
 * stream events for another task or after the end, appended chunks without a start, a cancel answered "working",
 * Retry-After with absurd values, an agent trickling its SendMessage answer, and answers labelled with content types the
 * bindings do not name, and a task listed finished but denied on GetTask (two FIXED FINDINGs). Real redis-server, real fleet, scripted raw
 * node:http agents counting SendMessage per messageId. Each `it` holds; the findings are marked FIXED FINDING.
 */
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { artifactText, finished, useFieldCases, viewOf, workflowSettled } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { closeServer, listenOnLoopback, trackSockets } from '../harness/ports.ts';
import { AU, SU, ev, task, taskEvent, type ScriptedAnswer } from '../harness/scripted-agent.ts';
import { startRestAgent } from '../harness/rest-agent.ts';
import { startTaskAgent } from '../harness/task-agent.ts';

const h = useFieldCases();
const keep = closeKeptAfterEach();
const fast = { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } };
const NOT_FOUND = { error: { code: -32001, message: 'Task not found' } } as const;

/** Our message as an agent keeps it in a task's history. */
const userOf = (messageId: string) => ({ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] });
/** A one-page JSON-RPC ListTasks answer. */
const page = (tasks: unknown[]) => ({ result: { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length } });
/** Waits (bounded) for delegation `id` to finish and asserts it COMPLETED on T1 with a1 holding `text`. */
async function completedWith(producer: Parameters<typeof finished>[0], id: string, text: string) {
  const record = await finished(producer, id, 45_000);
  expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
  expect(artifactText(await viewOf(producer, id), 'a1')).toBe(text);
}
/** Without its artifacts: what a ListTasks summary shows (spec default `includeArtifacts: false`). */
const summary = (value: Record<string, unknown>) => {
  const { artifacts: _artifacts, ...rest } = value;
  return rest;
};

describe('attack 30: a summary found by the reconciler whose full read cannot be accepted (A31/A35 kinds)', () => {
  it('crash window 2: ListTasks summary shows T1 COMPLETED holding our message; GetTask (and a listing with artifacts) over responseBodyBytes: AMBIGUOUS LIMIT_EXCEEDED, never resent, never COMPLETED without its result', async () => {
    let messageId = '';
    const full = () => task('T1', 'COMPLETED', { history: [userOf(messageId)], artifacts: { a1: 'z'.repeat(300 * 1024) } });
    const agent = await h.agentWith({
      ListTasks: (params) => page([params.includeArtifacts ? full() : summary(full())]),
      GetTask: () => ({ result: full() }),
      SubscribeToTask: () => ({ error: { code: -32004, message: 'terminal' } }),
    });
    const { producer, id } = await h.sentNotRecorded(agent, (ours) => (messageId = ours), { ...fast, limits: { responseBodyBytes: 256 * 1024 } });
    const record = await finished(producer, id, 40_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED' } });
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);

  it('crash window 2: ListTasks summary shows T1 COMPLETED; GetTask answers TaskNotFound; the listing with includeArtifacts shows a1: COMPLETED with a1 or a person, never without it, never resent', async () => {
    let messageId = '';
    const full = () => task('T1', 'COMPLETED', { history: [userOf(messageId)], artifacts: { a1: 'the booking' } });
    const agent = await h.agentWith({
      ListTasks: (params) => page([params.includeArtifacts ? full() : summary(full())]),
      GetTask: () => NOT_FOUND,
      SubscribeToTask: () => NOT_FOUND,
    });
    const { producer, id } = await h.sentNotRecorded(agent, (ours) => (messageId = ours), { ...fast, notFoundWindowMs: 2_000 });
    const record = await finished(producer, id, 40_000);
    expect(['COMPLETED', 'AMBIGUOUS']).toContain(record.state);
    if (record.state === 'COMPLETED') expect(artifactText(await viewOf(producer, id), 'a1')).toBe('the booking');
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);
});

describe('attack 30: the check before LOST reads a listing it cannot accept (A31 kind on the not-found path)', () => {
  it('T1 bound, then GetTask and SubscribeToTask TaskNotFound; the check\'s ListTasks is over responseBodyBytes: never LOST, never re-delegated to B', async () => {
    const sends = new Map<string, number>();
    const a = await h.agentWith({
      SendMessage: (params) => {
        sends.set(params.message.messageId, (sends.get(params.message.messageId) ?? 0) + 1);
        return { result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } };
      },
      GetTask: () => NOT_FOUND,
      SubscribeToTask: () => NOT_FOUND,
      ListTasks: () => page([task('TX', 'COMPLETED', { artifacts: { pad: 'p'.repeat(300 * 1024) } })]),
    });
    const b = await h.agentWith({ SendMessage: (params) => ({ result: { task: task('TB', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'B did it' } }) } }) });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    await producer.registerAgent(a.cardUrl);
    await producer.registerAgent(b.cardUrl);
    await h.fleetFor(prefix, { ...fast, notFoundWindowMs: 2_000, limits: { responseBodyBytes: 256 * 1024 } });
    const { id } = await producer.startWorkflow({ workflowId: `a30-lost-${Date.now()}`, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book' } }] });
    const view = await workflowSettled(producer, id, 45_000);
    const attempts = view.steps[0]!.attempts;
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.state).toBe('AMBIGUOUS');
    expect(b.count('SendMessage')).toBe(0);
    expect([...sends.values()]).toEqual([1]);
  }, 60_000);
});

/*
 * FIXED FINDING (a loop between two rows with no bound; kind: wherever an agent can make us repeat, bounded rounds).
 * Input: T1 bound (SendMessage answered WORKING, ours); GetTask and SubscribeToTask answer TaskNotFound for ever;
 * ListTasks lists T1 COMPLETED holding our message (a summary: includeArtifacts ignored). Observed: past the not-found
 * window, the check before LOST found T1 again, read it in full (GetTask), was denied, checked again, and so on:
 * ~300 GetTask and ~300 ListTasks a second, 11,000 of each in 60 s, the row WORKING, no person asked. Expected: a
 * person (AMBIGUOUS), in bounded calls; never LOST (the listing shows the work), never COMPLETED without its result.
 * Fixed: the read after "found again" carries it (`foundAgain` → `afterFoundAgain`), and its denial is the
 * `task-not-found` row's needs-person (core/transitions.ts). Property: packages/workers/test/denied-yet-listed-property.test.ts.
 */
describe('attack 30: the check before LOST finds our task again, but only as a summary the agent will not read back (A35 kind)', () => {
  it('T1 bound; GetTask and SubscribeToTask TaskNotFound for ever; ListTasks lists T1 COMPLETED (a summary, includeArtifacts ignored): ends in bounded calls, never LOST, never COMPLETED without its result', async () => {
    let messageId = '';
    const { producer, agent, id } = await h.setUpAndDelegate(() => ({
      SendMessage: (params) => ((messageId = params.message.messageId), { result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } }),
      GetTask: () => NOT_FOUND,
      SubscribeToTask: () => NOT_FOUND,
      ListTasks: () => page([task('T1', 'COMPLETED', { history: [userOf(messageId)] })]),
    }), { ...fast, notFoundWindowMs: 2_000 });
    const record = await finished(producer, id, 45_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('ListTasks')).toBeLessThanOrEqual(12);
  }, 60_000);
});

describe('attack 30: JSON-RPC ids of the wrong type on answers whose content proves them ours (A33 kind)', () => {
  const ids: [string, unknown][] = [
    ['true', true],
    ['an object', { id: 1 }],
    ['an array holding our id', [1]],
    ['an empty string', ''],
  ];
  for (const [name, envelopeId] of ids) {
    it(`SendMessage answers our COMPLETED task with "id": ${name}: COMPLETED with a1 (from the answer or the search), one SendMessage`, async () => {
      let messageId = '';
      const full = () => task('T1', 'COMPLETED', { history: [userOf(messageId)], artifacts: { a1: 'booked' } });
      const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
        SendMessage: (params) => ((messageId = params.message.messageId), (seen.contextId = params.message.contextId), { envelopeId, result: { task: { ...full(), contextId: params.message.contextId } } }),
        ListTasks: () => page(messageId ? [{ ...summary(full()), contextId: seen.contextId }] : []),
        GetTask: () => ({ result: { ...full(), contextId: seen.contextId } }),
        SubscribeToTask: () => ({ error: { code: -32004, message: 'terminal' } }),
      }), fast);
      await completedWith(producer, id, 'booked');
      expect(agent.count('SendMessage')).toBe(1);
    }, 60_000);
  }

  it('every GetTask answer carries "id": {} (SubscribeToTask unsupported): ends in bounded calls (a person or COMPLETED), never the no-progress window, one SendMessage', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: () => ({ envelopeId: {}, result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
    }), { ...fast, noProgressWindowMs: 600_000 });
    const record = await finished(producer, id, 40_000);
    expect(['COMPLETED', 'AMBIGUOUS']).toContain(record.state);
    if (record.state === 'COMPLETED') expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked');
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('GetTask')).toBeLessThanOrEqual(12);
  }, 60_000);

  it('CancelTask answers our task CANCELED with "id": null (it names the task we asked about): CANCELED, one SendMessage', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId }))], endAfter: 'hang' }),
      GetTask: () => ({ result: task('T1', 'WORKING', { contextId: seen.contextId }) }),
      CancelTask: (params) => ({ envelopeId: null, result: task(params.id, 'CANCELED', { contextId: seen.contextId }) }),
    }), fast);
    await eventually(async () => agent.count('SubscribeToTask') > 0, 'followed', 20_000);
    await producer.cancel(id);
    const record = await finished(producer, id, 40_000);
    expect(record.state).toBe('CANCELED');
    expect(agent.count('CancelTask')).toBeGreaterThanOrEqual(1);
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('crash window 2: ListTasks answers "id": null with an empty page: not read as "nothing sent" (never resent)', async () => {
    const agent = await h.agentWith({ ListTasks: () => ({ envelopeId: null, result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }) });
    const { producer, id } = await h.sentNotRecorded(agent, undefined, fast);
    const record = await finished(producer, id, 40_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(agent.count('SendMessage')).toBe(0);
  }, 60_000);
});

describe('attack 30: stream events that are not the whole story', () => {
  it('SubscribeToTask(T1): a statusUpdate COMPLETED and an artifact for T2 in our context: T1 never COMPLETED with them; T1 settles from its own reads', async () => {
    const { producer, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({
        sse: [
          taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })),
          ev(AU('a1', false, true, 'T2 result, not ours', { taskId: 'T2', contextId: seen.contextId })),
          ev(SU('COMPLETED', { taskId: 'T2', contextId: seen.contextId })),
        ],
      }),
      GetTask: (_params, call) => ({ result: task('T1', call.count < 3 ? 'WORKING' : 'COMPLETED', { contextId: seen.contextId, ...(call.count < 3 ? {} : { artifacts: { a1: 'booked' } }) }) }),
    }), fast);
    await completedWith(producer, id, 'booked');
  }, 60_000);

  it('events after the end: COMPLETED with a1 "booked", then a1 replaced "tampered" and FAILED on the same stream: COMPLETED with "booked"', async () => {
    const { producer, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({
        sse: [
          taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })),
          ev(AU('a1', false, true, 'booked', { contextId: seen.contextId })),
          ev(SU('COMPLETED', { contextId: seen.contextId })),
          ev(AU('a1', false, true, 'tampered', { contextId: seen.contextId })),
          ev(SU('FAILED', { contextId: seen.contextId })),
        ],
      }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
    }), fast);
    await completedWith(producer, id, 'booked');
  }, 60_000);

  it('a streaming send: our Task COMPLETED with a1 "booked", then a1 replaced "tampered" and FAILED on the same stream: COMPLETED with "booked", one send', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate(() => ({
      SendStreamingMessage: (params) => ({
        sse: [
          taskEvent(task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked' } })),
          ev(AU('a1', false, true, 'tampered', { contextId: params.message.contextId })),
          ev(SU('FAILED', { contextId: params.message.contextId })),
        ],
      }),
      GetTask: (params) => ({ result: task(params.id, 'COMPLETED', { artifacts: { a1: 'booked' } }) }),
    }), { ...fast, streamingSends: true });
    await completedWith(producer, id, 'booked');
    expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('a chunk with append: true for an artifact never started, then COMPLETED: read in full, a1 is the whole artifact GetTask shows', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({
        sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), ev(AU('a1', true, true, ' and the tail', { contextId: seen.contextId })), ev(SU('COMPLETED', { contextId: seen.contextId }))],
      }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'the head and the tail' } }) }),
    }), fast);
    const record = await finished(producer, id, 40_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe('the head and the tail');
    expect(agent.count('GetTask')).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('the same, GetTask failing 503 every time: the streamed chunk is kept (never a result-less success)', async () => {
    const { producer, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({
        sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })), ev(AU('a1', true, true, ' and the tail', { contextId: seen.contextId })), ev(SU('COMPLETED', { contextId: seen.contextId }))],
      }),
      GetTask: () => ({ http: { status: 503, body: 'busy', headers: { 'content-type': 'text/plain' } } }),
      ListTasks: () => ({ http: { status: 503, body: 'busy', headers: { 'content-type': 'text/plain' } } }),
    }), fast);
    const record = await finished(producer, id, 40_000);
    if (record.state === 'COMPLETED') expect(artifactText(await viewOf(producer, id), 'a1')).toContain('the tail');
    else expect(record.state).toBe('AMBIGUOUS');
  }, 60_000);

  it('lastChunk repeated: a1 "v1" (lastChunk), then an append to it "v2" (lastChunk again), COMPLETED: read in full, a1 is what GetTask shows', async () => {
    const { producer, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({
        sse: [
          taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })),
          ev(AU('a1', false, true, 'v1', { contextId: seen.contextId })),
          ev(AU('a1', true, true, 'v2', { contextId: seen.contextId })),
          ev(SU('COMPLETED', { contextId: seen.contextId })),
        ],
      }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'v1v2' } }) }),
    }), fast);
    const record = await finished(producer, id, 40_000);
    expect(record.state).toBe('COMPLETED');
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe('v1v2');
  }, 60_000);
});

describe('attack 30: a cancel the agent answers "working" and then finishes anyway (compensation)', () => {
  // Attack 32 added the second: CancelTask answered with T1 COMPLETED (the booking happened) is a step done.
  const cancelAnswers: [string, ScriptedAnswer][] = [
    ['T1 WORKING (a success answer, not canceled), then T1 COMPLETES', { result: task('T1', 'WORKING') }],
    ['T1 COMPLETED with a1 (the booking happened)', { result: task('T1', 'COMPLETED', { artifacts: { a1: 'booked anyway' } }) }],
  ];
  for (const [name, cancelAnswer] of cancelAnswers) it(`CancelTask answers ${name}: the booking is compensated once, the step sent once`, async () => {
    const steps = new Map<string, number>();
    const compensations: string[] = [];
    let canceled = false;
    const { producer, agent, prefix } = await h.setUp(() => ({
      SendMessage: (params): ScriptedAnswer => {
        const messageId = params.message.messageId as string;
        if (params.message.metadata?.durableA2a?.compensates) {
          compensations.push(messageId);
          return { result: { task: task(`U-${messageId}`, 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'undone' } }) } };
        }
        steps.set(messageId, (steps.get(messageId) ?? 0) + 1);
        return { result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } };
      },
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: () => ({ result: task('T1', canceled ? 'COMPLETED' : 'WORKING', canceled ? { artifacts: { a1: 'booked anyway' } } : {}) }),
      CancelTask: () => ((canceled = true), cancelAnswer),
    }), fast);
    void prefix;
    const { id } = await producer.startWorkflow({
      workflowId: `a30-cancel-${Date.now()}`,
      steps: [{ name: 'hotel', agent: agent.cardUrl, message: { text: 'book' }, compensation: { agent: agent.cardUrl, message: { text: 'cancel it' } } }],
    });
    await eventually(async () => agent.count('GetTask') > 0, 'followed', 20_000);
    await producer.cancel(id);
    const view = await eventually(async () => {
      const current = await producer.get(id);
      return ['COMPENSATED', 'CANCELED', 'FAILED', 'NEEDS_ATTENTION'].includes(current.state) && current;
    }, 'workflow stopped', 45_000);
    expect(agent.count('CancelTask')).toBeGreaterThanOrEqual(1);
    expect([...steps.values()]).toEqual([1]);
    expect(view.state).toBe('COMPENSATED');
    expect(compensations).toHaveLength(1);
  }, 60_000);
});

/*
 * FIXED FINDING (a label read as proof; kind: weak evidence decides over the content, as A33's null id did). Input: an
 * agent whose every 2xx answer is our own JSON (our envelope and request id, our task holding our messageId) labelled
 * `text/html; charset=utf-8`, `text/plain` or `application/octet-stream` (Express `res.send(text)` labels JSON
 * text/html), JSON-RPC or HTTP+JSON. Observed: every answer a ProtocolError ("expected JSON, got text/html"): the
 * SendMessage answer unreadable, the search's ListTasks too, so AMBIGUOUS SEARCH_UNAVAILABLE, a person for every
 * delegation, the happy path included. Expected: COMPLETED with a1, one send. Fixed: `jsonBodyOf`
 * (packages/a2a/src/response.ts) reads a 2xx body that is JSON whatever its label. Property:
 * packages/a2a/test/content-type-label-property.test.ts.
 */
describe('attack 30: the HTTP+JSON binding answered with content types it does not name', () => {
  for (const contentType of ['text/html; charset=utf-8', 'text/plain', 'application/octet-stream']) {
    it(`every answer (message:send WORKING ours, GET /tasks/T1 COMPLETED a1, GET /tasks) labelled ${contentType}: COMPLETED with a1, one message:send`, async () => {
      let received: { messageId: string; contextId?: string } | undefined;
      const full = () => task('T1', 'COMPLETED', { contextId: received?.contextId, history: [userOf(received!.messageId)], artifacts: { a1: 'booked' } });
      const agent = await startRestAgent((method, path, body) => {
        if (method === 'POST' && path === '/message:send') {
          received = { messageId: body.message.messageId, contextId: body.message.contextId };
          return { status: 200, body: { task: task('T1', 'WORKING', { contextId: received.contextId, history: [body.message] }) } };
        }
        if (method === 'GET' && path === '/tasks/T1') return { status: 200, body: full() };
        if (method === 'GET' && path === '/tasks') return { status: 200, body: { tasks: received ? [summary(full())] : [], nextPageToken: '', pageSize: 50, totalSize: received ? 1 : 0 } };
        return { status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'no route' } } };
      }, { contentType, streaming: false });
      keep(agent);
      const prefix = h.newPrefix();
      const producer = h.producer(prefix);
      await h.fleetFor(prefix, fast);
      const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'go', idempotencyKey: `${prefix}-rest` });
      await completedWith(producer, id, 'booked');
      expect(agent.count('POST /message:send')).toBe(1);
    }, 60_000);
  }
});

describe('attack 30: the JSON-RPC binding answered with content types it does not name', () => {
  for (const contentType of ['text/html; charset=utf-8', 'text/plain']) {
    it(`every answer (our envelope, our id, our COMPLETED task) labelled ${contentType}: COMPLETED with a1, one SendMessage`, async () => {
      let messageId = '';
      let contextId = '';
      const full = () => task('T1', 'COMPLETED', { contextId, history: [userOf(messageId)], artifacts: { a1: 'booked' } });
      const labelled = (id: unknown, result: unknown): ScriptedAnswer => ({ http: { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id, result }), headers: { 'content-type': contentType } } });
      const { producer, agent, id } = await h.setUpAndDelegate(() => ({
        SendMessage: (params, call) => ((messageId = params.message.messageId), (contextId = params.message.contextId), labelled(call.id, { task: full() })),
        GetTask: (_params, call) => labelled(call.id, full()),
        ListTasks: (_params, call) => labelled(call.id, { tasks: messageId ? [summary(full())] : [], nextPageToken: '', pageSize: 50, totalSize: messageId ? 1 : 0 }),
        SubscribeToTask: () => ({ error: { code: -32004, message: 'terminal' } }),
      }), fast);
      await completedWith(producer, id, 'booked');
      expect(agent.count('SendMessage')).toBe(1);
    }, 60_000);
  }
});

describe('attack 30: a stream of appended chunks whose full read is unusable and whose listing is a summary (A35 kind)', () => {
  it('a1 "part1" then appended "part2", COMPLETED; GetTask -32601, ListTasks a summary without artifacts: COMPLETED with "part1part2" (the streamed result kept, never lost to the read)', async () => {
    let messageId = '';
    const { producer, id } = await h.setUpAndDelegate((seen) => ({
      SendMessage: (params) => ((messageId = params.message.messageId), (seen.contextId = params.message.contextId), { result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } }),
      SubscribeToTask: () => ({
        sse: [
          taskEvent(task('T1', 'WORKING', { contextId: seen.contextId })),
          ev(AU('a1', false, false, 'part1', { contextId: seen.contextId })),
          ev(AU('a1', true, true, 'part2', { contextId: seen.contextId })),
          ev(SU('COMPLETED', { contextId: seen.contextId })),
        ],
      }),
      GetTask: () => ({ error: { code: -32601, message: 'Method not found' } }),
      ListTasks: () => page([task('T1', 'COMPLETED', { contextId: seen.contextId, history: [userOf(messageId)] })]),
    }), fast);
    await completedWith(producer, id, 'part1part2');
  }, 60_000);
});

describe('attack 30: Retry-After with absurd values on the follow path', () => {
  const waits: [string, Record<string, string>, unknown][] = [
    ['HTTP 429, Retry-After an HTTP-date in the year 9999', { 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' }, { error: 'busy' }],
    ['HTTP 429, Retry-After 9999999999 seconds', { 'retry-after': '9999999999' }, { error: 'busy' }],
    ['HTTP 429, a JSON-RPC error whose RetryInfo asks 1e300 seconds', {}, { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'slow down', data: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: { seconds: 1e300 } }] } }],
  ];
  for (const [name, headers, body] of waits) {
    it(`GetTask answered ${name}, then COMPLETED: the follow waits at most retryAfterMaxMs, COMPLETED with a1`, async () => {
      const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
        SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
        GetTask: (_params, call) => (call.count <= 2 ? { http: { status: 429, body: JSON.stringify(body), headers } } : { result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { a1: 'booked' } }) }),
      }), { ...fast, retryAfterMaxMs: 1_500 });
      await completedWith(producer, id, 'booked');
      expect(agent.count('SendMessage')).toBe(1);
    }, 60_000);
  }

  it('SendMessage answered 429 with Retry-After in the year 9999 (nothing created): a later delegation to the same agent is still sent within retryAfterMaxMs and COMPLETED', async () => {
    const sends = new Map<string, number>();
    const { producer, agent } = await h.setUp(() => ({
      SendMessage: (params, call): ScriptedAnswer => {
        sends.set(params.message.messageId, (sends.get(params.message.messageId) ?? 0) + 1);
        if (call.count === 1) return { http: { status: 429, body: JSON.stringify({ error: 'busy' }), headers: { 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' } } };
        return { result: { task: task(`T-${params.message.messageId}`, 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked' } }) } };
      },
      ListTasks: () => page([]),
    }), { ...fast, retryAfterMaxMs: 1_500 });
    const first = await producer.delegate({ agent: agent.cardUrl, text: 'first', idempotencyKey: `a30-ra-1-${Date.now()}` });
    await eventually(async () => agent.count('SendMessage') >= 1, 'first sent', 20_000);
    const second = await producer.delegate({ agent: agent.cardUrl, text: 'second', idempotencyKey: `a30-ra-2-${Date.now()}` });
    const record = await finished(producer, second.id, 40_000);
    expect(record.state).toBe('COMPLETED');
    const firstRecord = await finished(producer, first.id, 40_000);
    expect(['COMPLETED', 'AMBIGUOUS']).toContain(firstRecord.state);
    expect(Math.max(...sends.values())).toBeLessThanOrEqual(2);
  }, 60_000);
});

describe('attack 30: an agent that trickles its SendMessage answer (slowloris) while another must still be served', () => {
  it('send concurrency 4: 8 sends to an agent whose answer trickles one byte every 200 ms for ever, then 4 to a good agent: the 4 COMPLETED, each trickled message sent once', async () => {
    const sends = new Map<string, number>();
    const timers = new Set<NodeJS.Timeout>();
    let base = '';
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const path = (req.url ?? '').split('?')[0];
        if (req.method === 'GET' && path === '/.well-known/agent-card.json') {
          const card = { name: 'Trickle', description: 'trickles', version: '1.0.0', supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }], capabilities: { streaming: false }, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [{ id: 'x', name: 'x', description: 'x', tags: ['x'] }] };
          return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
        }
        const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown; method: string; params: any };
        if (envelope.method === 'ListTasks') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: envelope.id, result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }));
        if (envelope.method !== 'SendMessage') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: envelope.id, error: { code: -32601, message: 'no' } }));
        sends.set(envelope.params.message.messageId, (sends.get(envelope.params.message.messageId) ?? 0) + 1);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{');
        const timer = setInterval(() => (res.destroyed ? (clearInterval(timer), timers.delete(timer)) : res.write(' ')), 200);
        timers.add(timer);
      });
    });
    const sockets = trackSockets(server);
    base = `http://127.0.0.1:${await listenOnLoopback(server)}`;
    keep({ close: async () => { for (const timer of timers) clearInterval(timer); sockets.destroyAll(); await closeServer(server); } });
    const good = await startTaskAgent({ taskMs: 200 });
    keep(good);
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    await h.fleetFor(prefix, { ...fast, concurrency: { send: 4 }, requestTimeoutMs: 2_000 });
    for (let index = 0; index < 8; index++) await producer.delegate({ agent: `${base}/.well-known/agent-card.json`, text: `trickled ${index}`, idempotencyKey: `${prefix}-bad-${index}` });
    await eventually(async () => sends.size >= 4, 'the trickling agent holds sends', 30_000);
    const goodIds: string[] = [];
    for (let index = 0; index < 4; index++) goodIds.push((await producer.delegate({ agent: good.cardUrl, text: `good ${index}`, idempotencyKey: `${prefix}-good-${index}` })).id);
    await eventually(async () => (await Promise.all(goodIds.map((goodId) => producer.get(goodId)))).every((view) => view.state === 'COMPLETED'), 'the good ones COMPLETED', 60_000, 200);
    expect(good.count('SendMessage')).toBe(4);
    expect(Math.max(...sends.values())).toBe(1);
  }, 90_000);
});

describe('attack 30: an Agent Card that moves to another binding between the send and the reconcile', () => {
  it('crash window 2 at A (JSON-RPC, T1 holds our message); the card now names a REST agent B that lists nothing: T1 adopted from A, nothing sent to A or B', async () => {
    let messageId = '';
    const a = await h.agentWith({
      ListTasks: () => page(messageId ? [summary(task('T1', 'COMPLETED', { history: [userOf(messageId)], artifacts: { a1: 'booked at A' } }))] : []),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { history: [userOf(messageId)], artifacts: { a1: 'booked at A' } }) }),
      SubscribeToTask: () => ({ error: { code: -32004, message: 'terminal' } }),
    });
    const b = await startRestAgent((method, path) => {
      if (method === 'GET' && path === '/tasks') return { status: 200, body: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } };
      if (method === 'POST' && path === '/message:send') return { status: 200, body: { task: task('TB', 'COMPLETED', { artifacts: { a1: 'booked at B' } }) } };
      return { status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'no' } } };
    });
    keep(b);
    let cardOf = () => ({ status: 200, body: '' });
    const server = createServer(async (_req, res) => {
      const { status, body } = cardOf();
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(body);
    });
    const sockets = trackSockets(server);
    const cardUrl = `http://127.0.0.1:${await listenOnLoopback(server)}/.well-known/agent-card.json`;
    keep({ close: async () => (sockets.destroyAll(), closeServer(server)) });
    const aCard = await (await fetch(a.cardUrl)).text();
    cardOf = () => ({ status: 200, body: aCard });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    const { id } = await producer.delegate({ agent: cardUrl, text: 'go', idempotencyKey: `${prefix}-moved` });
    messageId = (await producer.journal.getDelegation({ workflowId: id, delegationId: 'main.1' }))!.messageId;
    const fence = await producer.journal.claim({ workflowId: id, delegationId: 'main.1' }, 'test/crash-window-2');
    await producer.journal.markSending({ workflowId: id, delegationId: 'main.1' }, fence, { url: a.rpcUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    const bCard = await (await fetch(b.cardUrl)).text();
    cardOf = () => ({ status: 200, body: bCard });
    await h.fleetFor(prefix, fast);
    await completedWith(producer, id, 'booked at A');
    expect(a.count('SendMessage')).toBe(0);
    expect(b.count('POST /message:send')).toBe(0);
  }, 60_000);
});

describe('attack 30: a CancelTask answer over a limit (A31 kind on the cancel path)', () => {
  it('the user cancels; CancelTask answers a task over responseBodyBytes; GetTask then shows CANCELED: never settled from the unread answer (COMPLETED), CANCELED from the read, one SendMessage', async () => {
    let cancels = 0;
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming not supported' } }),
      GetTask: () => ({ result: task('T1', cancels > 0 ? 'CANCELED' : 'WORKING', { contextId: seen.contextId }) }),
      CancelTask: () => ((cancels += 1), { result: task('T1', 'COMPLETED', { contextId: seen.contextId, artifacts: { pad: 'p'.repeat(300 * 1024) } }) }),
    }), { ...fast, limits: { responseBodyBytes: 256 * 1024 } });
    await eventually(async () => agent.count('GetTask') > 0, 'followed', 20_000);
    await producer.cancel(id);
    const record = await finished(producer, id, 40_000);
    expect(record.state).toBe('CANCELED');
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);
});

describe('attack 30: a limit hit on a subscription\'s first snapshot (A32 kind)', () => {
  it('the over-limit event is the first snapshot itself (a WORKING Task holding the 1,001-part artifact), then COMPLETED; GetTask COMPLETED without artifacts: never a result-less success', async () => {
    const { producer, id } = await h.setUpAndDelegate((seen) => ({
      SubscribeToTask: () => ({
        sse: [taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, artifacts: [{ artifactId: 'a1', parts: Array.from({ length: 1_001 }, (_, index) => ({ text: `p${index}` })) }] })), ev(SU('COMPLETED', { contextId: seen.contextId }))],
      }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId }) }),
    }), fast);
    const record = await finished(producer, id, 40_000);
    expect(record).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED' } });
  }, 60_000);
});
