/**
 * Attack round 28: the saga (verify, compensate) and re-delegation, where earlier rounds attacked the send and
 * stream paths. Real redis-server, real fleet, scripted raw node:http JSON-RPC agents that count every SendMessage
 * per messageId and tell a step's message from a compensation's (`metadata.durableA2a.compensates`). Passing `it`:
 * the product holds (a regression test); a FIXED FINDING names its kind, input, what was observed and the fix.
 */
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { Producer, WorkflowView } from '@durable-a2a/producer';
import { httpVerifier } from '@durable-a2a/workers';
import { useFieldCases } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { closeServer, listenOnLoopback, trackSockets } from '../harness/ports.ts';
import { task, type ScriptedAnswer, type ScriptedHandlers } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const keep = closeKeptAfterEach();
const fast = { reconcileIntervalMs: 300, followBackoff: { baseMs: 100, capMs: 500 } };

/** What a booking agent is asked: a step's message, or a compensation of one (its metadata says which). */
type Asked = 'step' | 'compensation';

/** A scripted agent with skill `scripted` that counts SendMessage per messageId and answers per kind of message. */
async function bookingAgent(answer: (asked: Asked, params: any, count: number) => ScriptedAnswer, more: ScriptedHandlers = {}) {
  const sends = new Map<string, number>();
  const compensations: string[] = [];
  const steps: string[] = [];
  const bodies: number[] = [];
  const agent = await h.agentWith({
    SendMessage: (params) => {
      const messageId = params.message.messageId as string;
      const count = (sends.get(messageId) ?? 0) + 1;
      sends.set(messageId, count);
      bodies.push(JSON.stringify(params).length);
      const asked: Asked = params.message.metadata?.durableA2a?.compensates ? 'compensation' : 'step';
      (asked === 'step' ? steps : compensations).push(messageId);
      return answer(asked, params, count);
    },
    ...more,
  });
  return { agent, sends, compensations, steps, bodies, sendsOf: (messageId: string) => sends.get(messageId) ?? 0 };
}

/** A Task of ours in `state`: our message as its history, in our context, with artifact a1 when COMPLETED. */
const ours = (id: string, state: string, params: any, extra: Record<string, unknown> = {}) =>
  task(id, state, { contextId: params.message.contextId, history: [params.message], ...(state === 'COMPLETED' ? { artifacts: { a1: `${id} done` } } : {}), ...extra });

/** A producer and fleet on a fresh prefix (fast timings), with `agents` registered in that order. */
async function saga(agents: { cardUrl: string }[], fleetOptions: Record<string, unknown> = {}) {
  const prefix = h.newPrefix();
  const producer = h.producer(prefix);
  for (const agent of agents) await producer.registerAgent(agent.cardUrl);
  const fleet = await h.fleetFor(prefix, { ...fast, ...fleetOptions });
  return { producer, fleet, prefix };
}

/** Waits (bounded) for the workflow to reach one of `states`. */
async function reach(producer: Producer, id: string, states: string[], timeoutMs = 40_000): Promise<WorkflowView> {
  return eventually(async () => {
    const view = await producer.get(id);
    return states.includes(view.state) && view;
  }, `${id} reaches ${states.join('|')}`, timeoutMs);
}

describe('attack 28: compensation goes to the agent that made the effect', () => {
  /*
   * FIXED FINDING (an undo sent to an agent that did not do the work; kind: a skill compensation picks the first agent with
   * the skill, not the one whose effect it undoes). Input: agents A and B registered with skill `scripted` (A first);
   * step `hotel` {skill: scripted, compensation: {skill: scripted, message: "cancel it"}}, maxAttemptsPerStep 2; A
   * REJECTS the booking, B books (COMPLETED); the next step (fixed agent C) is REJECTED, so hotel.2 is compensated.
   * Observed: the compensation goes to A (the first registered agent with the skill), which answers COMPLETED (it
   * has nothing to cancel): the workflow ends COMPENSATED while B's booking stays. Expected: the undo goes to the agent
   * of the attempt it undoes (hotel.2: B) whenever that agent has the compensation's skill. Fixed:
   * `compensationAgentOf` (packages/shared/src/registry.ts), used by workflow/compensation.ts. Property:
   * packages/shared/test/compensation-agent-property.test.ts.
   */
  it('a skill compensation of the re-delegated attempt goes to B, which booked, never to A, which refused', async () => {
    const a = await bookingAgent((asked, params) => ({ result: { task: ours(`TA-${params.message.messageId}`, asked === 'step' ? 'REJECTED' : 'COMPLETED', params) } }));
    const b = await bookingAgent((_asked, params) => ({ result: { task: ours(`TB-${params.message.messageId}`, 'COMPLETED', params) } }));
    const c = await bookingAgent((_asked, params) => ({ result: { task: ours('TC', 'REJECTED', params) } }));
    const { producer } = await saga([a.agent, b.agent]);
    const { id } = await producer.startWorkflow({
      workflowId: `a28-undo-agent-${Date.now()}`,
      maxAttemptsPerStep: 2,
      steps: [
        { name: 'hotel', skill: 'scripted', message: { text: 'book a room' }, compensation: { skill: 'scripted', message: { text: 'cancel it' } } },
        { name: 'pay', agent: c.agent.cardUrl, message: { text: 'pay' } },
      ],
    });
    const view = await reach(producer, id, ['COMPENSATED', 'FAILED', 'NEEDS_ATTENTION']);
    const hotel = view.steps.find((step) => step.name === 'hotel')!;
    expect(hotel.attempts.map((attempt) => attempt.state)).toEqual(['REJECTED', 'COMPLETED']);
    expect(view.state).toBe('COMPENSATED');
    expect(a.compensations).toEqual([]);
    expect(b.compensations).toHaveLength(1);
    expect(b.sendsOf(b.compensations[0]!)).toBe(1);
  }, 60_000);
});

describe('attack 28: what a re-delegation carries', () => {
  // Tried: agent A answers our task FAILED with a status message of 2 MiB of text; the step goes to B. Holds if A's
  // error and the reason B receives (a text part and metadata.durableA2a.previousAttempts) are bounded.
  it('a FAILED status message of 2 MiB: A\'s error and the reason B receives are bounded', async () => {
    const huge = 'x'.repeat(2 * 1024 * 1024);
    const a = await bookingAgent((_asked, params) => ({ result: { task: ours('TA', 'FAILED', params, { message: { role: 'ROLE_AGENT', messageId: 'why', parts: [{ text: `no room: ${huge}` }] } }) } }));
    const b = await bookingAgent((_asked, params) => ({ result: { task: ours('TB', 'COMPLETED', params) } }));
    const { producer } = await saga([a.agent, b.agent]);
    const { id } = await producer.startWorkflow({ workflowId: `a28-reason-${Date.now()}`, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book a room' } }] });
    const view = await reach(producer, id, ['COMPLETED', 'FAILED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('COMPLETED');
    const first = await producer.journal.getDelegation({ workflowId: id, delegationId: 'hotel.1' });
    expect(first?.error?.message.startsWith('no room: x')).toBe(true);
    expect(first!.error!.message.length).toBeLessThanOrEqual(64 * 1024);
    expect(b.bodies).toHaveLength(1);
    expect(b.bodies[0]!).toBeLessThan(64 * 1024);
  }, 60_000);
});

describe('attack 28: the verifier', () => {
  /*
   * FIXED FINDING (a verifier's answer stored whole; kind: the read path that verifies an effect has no byte limit).
   * Input: a step with `httpVerifier` whose system of record answers 20 MB of JSON. Observed: the whole body is read
   * into memory and journaled as the evidence twice (the row's `evidence` and the history's verification entry).
   * Expected: the verifier's read stops at a limit, and the journal keeps a bounded excerpt of any verifier's evidence.
   * Fixed: `httpVerifier` reads at most `maxBodyBytes` (1 MiB; over it: unknown, with the reason) and the journal's
   * `recordEffect` keeps any evidence within `statusMessageBytes` (`boundedEvidence`, packages/shared/src/journal/
   * evidence.ts). Property: packages/shared/test/evidence-bound-property.test.ts.
   */
  it('a system of record that answers 20 MB: the evidence journaled is bounded', async () => {
    const pad = 'y'.repeat(20 * 1024 * 1024);
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'booked', pad })));
    const sockets = trackSockets(server);
    const port = await listenOnLoopback(server);
    keep({ close: async () => (sockets.destroyAll(), closeServer(server)) });
    const booking = httpVerifier({ urlTemplate: `http://127.0.0.1:${port}/bookings/{messageId}`, responseSchema: { parse: (value: unknown) => value as { status: string } }, effectOf: (body) => (body.status === 'booked' ? 'present' : 'absent') });
    const a = await bookingAgent((_asked, params) => ({ result: { task: ours('TA', 'COMPLETED', params) } }));
    const { producer } = await saga([a.agent], { verifiers: { booking } });
    const { id } = await producer.startWorkflow({ workflowId: `a28-evidence-${Date.now()}`, steps: [{ name: 'hotel', agent: a.agent.cardUrl, message: { text: 'book' }, verifier: { name: 'booking' } }] });
    const view = await reach(producer, id, ['COMPLETED', 'FAILED', 'NEEDS_ATTENTION']);
    const row = await producer.journal.getDelegationView({ workflowId: id, delegationId: 'hotel.1' });
    // Unknown: the read stopped at the limit, so nothing proves the effect either way (a person is asked).
    expect(row).toMatchObject({ effect: 'unknown', evidence: { refused: expect.stringContaining('maxBodyBytes') } });
    expect(view).toMatchObject({ state: 'NEEDS_ATTENTION', attention: { code: 'EFFECT_UNKNOWN' } });
    expect(JSON.stringify(row?.evidence ?? null).length).toBeLessThan(256 * 1024);
    expect(JSON.stringify(view.history).length).toBeLessThan(256 * 1024);
  }, 60_000);

  it('a verifier of its own that returns 5 MB of evidence: its finding kept, the evidence journaled as a bounded excerpt', async () => {
    const ledger = { verify: async () => ({ effect: 'present' as const, evidence: { entry: 'L-1', pad: 'q'.repeat(5 * 1024 * 1024) } }) };
    const a = await bookingAgent((_asked, params) => ({ result: { task: ours('TA', 'COMPLETED', params) } }));
    const { producer } = await saga([a.agent], { verifiers: { ledger } });
    const { id } = await producer.startWorkflow({ workflowId: `a28-evidence-own-${Date.now()}`, steps: [{ name: 'hotel', agent: a.agent.cardUrl, message: { text: 'book' }, verifier: { name: 'ledger' } }] });
    const view = await reach(producer, id, ['COMPLETED', 'FAILED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('COMPLETED');
    const row = await producer.journal.getDelegationView({ workflowId: id, delegationId: 'hotel.1' });
    expect(row).toMatchObject({ effect: 'present', evidence: { excerpt: expect.stringContaining('"entry":"L-1"'), cut: { bytes: expect.any(Number) } } });
    expect(JSON.stringify(row?.evidence).length).toBeLessThanOrEqual(64 * 1024);
    expect(JSON.stringify(view.history).length).toBeLessThan(256 * 1024);
  }, 60_000);
});

/** A JSON-RPC ListTasks answer listing `tasks` on one page. */
const listed = (tasks: unknown[]) => ({ result: { tasks, nextPageToken: '', pageSize: 50, totalSize: tasks.length } });

/**
 * An agent that does the work on every SendMessage (its task COMPLETED, our message in its history, listed and read
 * back), then answers `answer` instead of the task; `kinds` chooses which messages get `answer` (others: the task).
 */
async function doesThenAnswers(answer: (params: any) => ScriptedAnswer, kinds: Asked[] = ['step']) {
  const made = new Map<string, any>();
  const handle = await bookingAgent(
    (asked, params) => {
      const id = `T-${asked}-${params.message.messageId}`;
      const done = ours(id, 'COMPLETED', params);
      made.set(id, done);
      return kinds.includes(asked) ? answer(params) : { result: { task: done } };
    },
    {
      ListTasks: () => listed([...made.values()]),
      GetTask: (params) => (made.has(params.id) ? { result: made.get(params.id) } : { error: { code: -32001, message: 'Task not found' } }),
    },
  );
  return { ...handle, made };
}

describe('attack 28: an answer of A that does not prove "nothing happened" never sends the step to B', () => {
  const kinds: [string, (params: any) => ScriptedAnswer][] = [
    ['HTTP 502 text after the task was made', () => ({ http: { status: 502, body: 'Bad Gateway', headers: { 'content-type': 'text/plain' } } })],
    ['-32603 Internal error after the task was made', () => ({ error: { code: -32603, message: 'internal error while answering' } })],
    ['a JSON-RPC answer over the response limit', (params) => ({ result: { task: ours('big', 'COMPLETED', params, { artifacts: { a1: 'z'.repeat(300 * 1024) } }) } })],
    ['-32006 InvalidAgentResponse', () => ({ error: { code: -32006, message: 'could not build the answer' } })],
    ['HTTP 409 with an A2A error body', () => ({ http: { status: 409, body: JSON.stringify({ error: { code: 409, status: 'ALREADY_EXISTS', message: 'exists' } }) } })],
  ];
  for (const [name, answer] of kinds) {
    it(`${name}: B gets no SendMessage`, async () => {
      const a = await doesThenAnswers(answer);
      const b = await bookingAgent((_asked, params) => ({ result: { task: ours(`TB-${params.message.messageId}`, 'COMPLETED', params) } }));
      const { producer } = await saga([a.agent, b.agent], { limits: { responseBodyBytes: 256 * 1024 } });
      const { id } = await producer.startWorkflow({ workflowId: `a28-kind-${Date.now()}`, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book a room' } }] });
      const view = await reach(producer, id, ['COMPLETED', 'FAILED', 'NEEDS_ATTENTION', 'COMPENSATED']);
      expect(b.steps).toEqual([]);
      expect(a.steps).toHaveLength(1);
      expect(view.steps[0]!.attempts).toHaveLength(1);
    }, 60_000);
  }

  /*
   * FIXED FINDING (an error code read as a refusal of something we never asked; kind: TaskNotFound on a SendMessage that
   * names no task proves nothing about our request). Input: agent A books (its task T, our message in history, listed
   * by ListTasks), then answers our first SendMessage, which names no taskId, with `-32001 Task not found`; agent B
   * has the skill; maxAttemptsPerStep 2. Observed: hotel.1 FAILED TASK_NOT_FOUND without a search, hotel.2 sent to B:
   * two bookings. Expected: -32001 refuses only a request that named a task (spec §3.3.2, §5.4: "the specified task
   * ID"); on a SendMessage naming none its effect is `maybe`: the search adopts A's task, B gets nothing. Fixed:
   * the error table's `concerns: 'task'` column, read by `sendEffectOf(error, { namesTask: false })` (packages/a2a/src/
   * errors.ts) from the send path (io/send-errors.ts). Property: packages/a2a/test/error-code-effect-property.test.ts.
   */
  it('-32001 TaskNotFound answered to a SendMessage naming no task, after the booking: adopted, B gets no SendMessage', async () => {
    const a = await doesThenAnswers(() => ({ error: { code: -32001, message: 'Task not found' } }));
    const b = await bookingAgent((_asked, params) => ({ result: { task: ours(`TB-${params.message.messageId}`, 'COMPLETED', params) } }));
    const { producer } = await saga([a.agent, b.agent]);
    const { id } = await producer.startWorkflow({ workflowId: `a28-notfound-${Date.now()}`, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book a room' } }] });
    const view = await reach(producer, id, ['COMPLETED', 'FAILED', 'NEEDS_ATTENTION']);
    expect(b.steps).toEqual([]);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts).toHaveLength(1);
    expect(a.sendsOf(a.steps[0]!)).toBe(1);
  }, 60_000);
});

describe('attack 28: budgets', () => {
  it('three agents refuse, maxAttemptsPerStep 2: exactly two SendMessage, the third agent never asked, FAILED naming both', async () => {
    const refuse = () => bookingAgent((_asked, params) => ({ result: { task: ours(`TR-${params.message.messageId}`, 'REJECTED', params) } }));
    const [a, b, c] = [await refuse(), await refuse(), await refuse()];
    const { producer } = await saga([a.agent, b.agent, c.agent]);
    const { id } = await producer.startWorkflow({ workflowId: `a28-budget-${Date.now()}`, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book' } }] });
    const view = await reach(producer, id, ['FAILED', 'NEEDS_ATTENTION', 'COMPLETED']);
    expect(view.state).toBe('FAILED');
    expect([a.steps.length, b.steps.length, c.steps.length]).toEqual([1, 1, 0]);
    expect(view.failure?.join(' ')).toContain('exhausted its budget of 2');
  }, 60_000);

  it('two fleets decide the same refusal at once: one attempt 2, B asked once', async () => {
    const a = await bookingAgent((_asked, params) => ({ result: { task: ours(`TA-${params.message.messageId}`, 'REJECTED', params) } }));
    const b = await bookingAgent((_asked, params) => ({ result: { task: ours(`TB-${params.message.messageId}`, 'COMPLETED', params) } }));
    const { producer, prefix } = await saga([a.agent, b.agent]);
    await h.fleetFor(prefix, fast);
    await h.fleetFor(prefix, fast);
    const { id } = await producer.startWorkflow({ workflowId: `a28-race-${Date.now()}`, maxAttemptsPerStep: 3, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book' } }] });
    const view = await reach(producer, id, ['COMPLETED', 'FAILED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts).toHaveLength(2);
    expect(b.steps).toHaveLength(1);
    expect(b.sendsOf(b.steps[0]!)).toBe(1);
    expect(a.sendsOf(a.steps[0]!)).toBe(1);
  }, 60_000);
});

/** A two-step saga: `hotel` at `hotelAgent` with a compensation there, then `pay` at an agent that refuses it. */
async function refusedAfterHotel(hotelAgent: { agent: { cardUrl: string } }, hotelOptions: Record<string, unknown> = {}) {
  const payer = await bookingAgent((_asked, params) => ({ result: { task: ours(`TP-${params.message.messageId}`, 'REJECTED', params) } }));
  const { producer, prefix } = await saga([]);
  const { id } = await producer.startWorkflow({
    workflowId: `a28-saga-${Date.now()}`,
    maxAttemptsPerStep: 1,
    steps: [
      { name: 'hotel', agent: hotelAgent.agent.cardUrl, message: { text: 'book a room' }, compensation: { agent: hotelAgent.agent.cardUrl, message: { text: 'cancel that room' } }, ...hotelOptions },
      { name: 'pay', agent: payer.agent.cardUrl, message: { text: 'pay' } },
    ],
  });
  return { producer, prefix, id };
}

/** The saga of `refusedAfterHotel` run to its end: COMPENSATED, hotel's compensation sent once (one SendMessage). */
async function compensatedOnce(hotel: Parameters<typeof refusedAfterHotel>[0] & { compensations: string[]; sendsOf: (messageId: string) => number }) {
  const { producer, id } = await refusedAfterHotel(hotel);
  const view = await reach(producer, id, ['COMPENSATED', 'FAILED', 'NEEDS_ATTENTION']);
  expect(view.state).toBe('COMPENSATED');
  expect(hotel.compensations).toHaveLength(1);
  expect(hotel.sendsOf(hotel.compensations[0]!)).toBe(1);
  return view;
}

describe('attack 28: hostile or broken compensation agents', () => {
  it('the compensation was taken (task made) but its answer lost (HTTP 502): adopted by our messageId, sent once, COMPENSATED', async () => {
    const hotel = await doesThenAnswers(() => ({ http: { status: 502, body: 'Bad Gateway', headers: { 'content-type': 'text/plain' } } }), ['compensation']);
    const view = await compensatedOnce(hotel);
    const undo = view.steps[0]!.compensations[0]!;
    expect(undo).toMatchObject({ state: 'COMPLETED', taskId: `T-compensation-${hotel.compensations[0]}` });
  }, 60_000);

  it('the compensation answer lost and the agent cannot list tasks: never marked done, never sent again, a person decides', async () => {
    const hotel = await doesThenAnswers(() => ({ http: { status: 502, body: 'Bad Gateway', headers: { 'content-type': 'text/plain' } } }), ['compensation']);
    hotel.agent.script({ ListTasks: () => ({ error: { code: -32601, message: 'Method not found' } }) });
    const { producer, id } = await refusedAfterHotel(hotel);
    const view = await reach(producer, id, ['COMPENSATED', 'FAILED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('NEEDS_ATTENTION');
    expect(view.attention?.code).toBe('COMPENSATION_FAILED');
    expect(hotel.compensations).toHaveLength(1);
    expect(hotel.sendsOf(hotel.compensations[0]!)).toBe(1);
  }, 60_000);

  it('a compensation refused (-32602): COMPENSATION_FAILED, sent once, never retried by itself', async () => {
    const hotel = await bookingAgent((asked, params) => (asked === 'step' ? { result: { task: ours(`TH-${params.message.messageId}`, 'COMPLETED', params) } } : { error: { code: -32602, message: 'no such booking' } }));
    const { producer, id } = await refusedAfterHotel(hotel);
    const view = await reach(producer, id, ['COMPENSATED', 'FAILED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('NEEDS_ATTENTION');
    expect(view.attention?.code).toBe('COMPENSATION_FAILED');
    expect(hotel.compensations).toHaveLength(1);
    // The workflow waits for a person: its reconciler's looks send nothing more (bounded wait on the agent's count).
    await eventually(async () => (await producer.get(id)).state === 'NEEDS_ATTENTION' && hotel.compensations.length === 1, 'still one compensation', 3_000);
    expect(hotel.compensations).toHaveLength(1);
  }, 60_000);

  it('a compensation agent speaking ProtoJSON proto names with "id": null envelopes: COMPENSATED, sent once', async () => {
    const protoTask = (params: any, id: string) => ({
      id,
      context_id: params.message.contextId,
      status: { state: 'TASK_STATE_COMPLETED' },
      history: [{ message_id: params.message.messageId, context_id: params.message.contextId, role: 'ROLE_USER', parts: params.message.parts }],
    });
    const hotel = await bookingAgent((asked, params) =>
      asked === 'step' ? { result: { task: ours(`TH-${params.message.messageId}`, 'COMPLETED', params) } } : { result: { task: protoTask(params, `TU-${params.message.messageId}`) }, envelopeId: null },
    );
    await compensatedOnce(hotel);
  }, 60_000);

  it('a compensation agent that holds SendMessage (the task made at once, listed): adopted, sent once, COMPENSATED', async () => {
    const hotel = await doesThenAnswers(() => ({ hang: true }), ['compensation']);
    await compensatedOnce(hotel);
  }, 60_000);

  it('compensation of a step whose effect is unknown (AMBIGUOUS, abandoned by a person): undone once, its task id unknown', async () => {
    // hotel answers its step over the response limit (AMBIGUOUS: it may have booked); a person abandons the workflow.
    const hotel = await bookingAgent((asked, params) =>
      asked === 'step' ? { result: { task: ours('big', 'COMPLETED', params, { artifacts: { a1: 'z'.repeat(300 * 1024) } }) } } : { result: { task: ours(`TU-${params.message.messageId}`, 'COMPLETED', params) } },
    );
    const payer = await bookingAgent((_asked, params) => ({ result: { task: ours(`TP-${params.message.messageId}`, 'COMPLETED', params) } }));
    const { producer } = await saga([], { limits: { responseBodyBytes: 256 * 1024 } });
    const { id } = await producer.startWorkflow({
      workflowId: `a28-ambiguous-${Date.now()}`,
      steps: [
        { name: 'hotel', agent: hotel.agent.cardUrl, message: { text: 'book a room' }, compensation: { agent: hotel.agent.cardUrl, message: { text: 'cancel that room' } } },
        { name: 'pay', agent: payer.agent.cardUrl, message: { text: 'pay' } },
      ],
    });
    const waiting = await reach(producer, id, ['NEEDS_ATTENTION', 'COMPENSATED', 'FAILED', 'COMPLETED']);
    expect(waiting.state).toBe('NEEDS_ATTENTION');
    expect(payer.steps).toEqual([]);
    await producer.resolve(id, 'abandon');
    const view = await reach(producer, id, ['COMPENSATED', 'FAILED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('COMPENSATED');
    expect(hotel.compensations).toHaveLength(1);
    expect(hotel.sendsOf(hotel.compensations[0]!)).toBe(1);
    expect(hotel.steps).toHaveLength(1);
  }, 60_000);

  /*
   * FIXED FINDING (an undo that cannot start is never surfaced; kind: a compensation with no agent throws in the compensate
   * job, retried for ever). Input: hotel COMPLETED; its compensation names skill `nobody-has-it`, which no registered
   * agent has; the next step is REJECTED. Observed: the workflow stays COMPENSATING for ever (the compensate job throws
   * "no registered agent has skill", the reconciler enqueues it again every interval), no person is told. Expected:
   * NEEDS_ATTENTION COMPENSATION_FAILED naming the reason, as for any compensation that cannot succeed. Fixed: the
   * undo is journaled under an unassigned agent (delegation/unassigned.ts) and refused by the send path before
   * anything leaves (the `agent-missing` row: FAILED NO_AGENT, not-sent); the chain surfaces it. Property: the
   * `agent-missing` row in packages/workers/test/transitions.test.ts and compensation-agent-property.test.ts.
   */
  it('a skill compensation no registered agent can run: a person is asked, the workflow not left COMPENSATING', async () => {
    const hotel = await bookingAgent((_asked, params) => ({ result: { task: ours(`TH-${params.message.messageId}`, 'COMPLETED', params) } }));
    const payer = await bookingAgent((_asked, params) => ({ result: { task: ours(`TP-${params.message.messageId}`, 'REJECTED', params) } }));
    const { producer } = await saga([]);
    const { id } = await producer.startWorkflow({
      workflowId: `a28-no-undo-agent-${Date.now()}`,
      maxAttemptsPerStep: 1,
      steps: [
        { name: 'hotel', agent: hotel.agent.cardUrl, message: { text: 'book a room' }, compensation: { skill: 'nobody-has-it', message: { text: 'cancel that room' } } },
        { name: 'pay', agent: payer.agent.cardUrl, message: { text: 'pay' } },
      ],
    });
    const view = await reach(producer, id, ['COMPENSATED', 'FAILED', 'NEEDS_ATTENTION'], 20_000);
    expect(view.state).toBe('NEEDS_ATTENTION');
    expect(view.attention?.code).toBe('COMPENSATION_FAILED');
    expect(view.attention?.message).toContain('nobody-has-it');
    const undo = view.steps[0]!.compensations[0]!;
    expect(undo).toMatchObject({ state: 'FAILED', error: { code: 'NO_AGENT' } });
    expect(hotel.compensations).toEqual([]);
    // A person gives the undo up: FAILED, naming the effect left in place (never back to the same attention).
    await producer.resolve(id, 'abandon');
    const ended = await reach(producer, id, ['FAILED', 'COMPENSATED']);
    expect(ended.state).toBe('FAILED');
    expect(ended.failure?.join(' ')).toContain('left in place');
  }, 60_000);

  it('a worker closed while the compensation\'s SendMessage is held, then Redis restarted: the next fleet adopts it, sent once, COMPENSATED', async () => {
    // The agent makes the undo's task at once (listed, COMPLETED) and never answers that SendMessage.
    const hotel = await doesThenAnswers(() => ({ hang: true }), ['compensation']);
    const payer = await bookingAgent((_asked, params) => ({ result: { task: ours(`TP-${params.message.messageId}`, 'REJECTED', params) } }));
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    const first = await h.fleetFor(prefix, fast);
    const { id } = await producer.startWorkflow({
      workflowId: `a28-undo-close-${Date.now()}`,
      maxAttemptsPerStep: 1,
      steps: [
        { name: 'hotel', agent: hotel.agent.cardUrl, message: { text: 'book a room' }, compensation: { agent: hotel.agent.cardUrl, message: { text: 'cancel that room' } } },
        { name: 'pay', agent: payer.agent.cardUrl, message: { text: 'pay' } },
      ],
    });
    await eventually(async () => hotel.compensations.length === 1, 'the compensation held at the agent', 20_000);
    await first.close();
    // Redis restarts from a snapshot taken now (no fleet runs: nothing is written in between).
    const server = h.redisServer();
    const { Redis } = await import('ioredis');
    const admin = new Redis(server.url);
    try {
      await admin.call('SAVE');
    } finally {
      admin.disconnect();
    }
    await server.kill();
    await server.restart();
    await h.fleetFor(prefix, fast);
    const view = await reach(producer, id, ['COMPENSATED', 'FAILED', 'NEEDS_ATTENTION']);
    expect(view.state).toBe('COMPENSATED');
    expect(hotel.compensations).toHaveLength(1);
    expect(hotel.sendsOf(hotel.compensations[0]!)).toBe(1);
    expect(view.steps[0]!.compensations).toHaveLength(1);
  }, 90_000);
});
