/**
 * Truthful outcomes end to end (field cases R31, V6): a cancel never makes a workflow report
 * CANCELED while the agent did (or may have done) the work. Producer → fleet → a scripted raw node:http
 * JSON-RPC agent → journal; the agent counts every call.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../harness/fleet.ts';
import { recordOf, sleep, useFieldCases, workflowSettled } from '../harness/field-cases.ts';
import { SU, ev, task, type ScriptedHandler } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const TASK_NOT_CANCELABLE = { error: { code: -32002, message: 'Task cannot be canceled' } };
const booked = (seen: { contextId?: string }) => task('T1', 'COMPLETED', { contextId: seen.contextId, timestamp: h.at(2), artifacts: { a1: 'booked' } });

describe('R31: cancel races completion', () => {
  const silentAfterWorking = (seen: { contextId?: string }) => ({
    SubscribeToTask: () => ({ sse: [ev(SU('WORKING', { contextId: seen.contextId, timestamp: h.at(1) }))], endAfter: 'hang' as const }),
    // The agent finished meanwhile: GetTask says COMPLETED with a1 = "booked", and CancelTask is refused.
    GetTask: () => ({ result: booked(seen) }),
    CancelTask: () => TASK_NOT_CANCELABLE,
  });

  it('a single delegation with no compensation: NEEDS_ATTENTION CANCEL_LOST_RACE with the completed step as evidence, never CANCELED', async () => {
    const { producer: p, agent } = await h.setUp(silentAfterWorking, { reconcileIntervalMs: 60_000 });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'r31' });
    await eventually(async () => (await recordOf(p, id))?.state === 'WORKING', 'T1 WORKING', 10_000);
    await p.cancel(id);
    const view = await workflowSettled(p, id);
    expect(view.state).toBe('NEEDS_ATTENTION');
    expect(view.attention).toMatchObject({ code: 'CANCEL_LOST_RACE', delegationId: 'main.1', evidence: { state: 'COMPLETED', taskId: 'T1' } });
    const attempt = view.steps[0]!.attempts[0]!;
    expect(attempt).toMatchObject({ state: 'COMPLETED', resultText: 'booked' });
    expect(agent.count('CancelTask')).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    // It stays that way: a person decides.
    await sleep(500);
    expect((await p.get(id)).state).toBe('NEEDS_ATTENTION');
  });

  it('a read-only step: the cancel lost the race and nothing happened that it would have stopped, COMPLETED', async () => {
    const { producer: p, agent } = await h.setUp(silentAfterWorking, { reconcileIntervalMs: 60_000 });
    const { id } = await p.startWorkflow({ workflowId: 'r31-read-only', steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'quote' }, readOnly: true }] });
    await eventually(async () => (await recordOf(p, id))?.state === 'WORKING', 'T1 WORKING', 10_000);
    await p.cancel(id);
    const view = await workflowSettled(p, id);
    expect(view.state).toBe('COMPLETED');
    expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', resultText: 'booked' });
    expect(agent.count('CancelTask')).toBe(1);
  });
});

describe('V6: cancel while the send is held', () => {
  /** SendMessage answers only when the work is done (1.2 s, within the request timeout): COMPLETED, a1 = "booked". */
  const slowBooking = (seen: { contextId?: string; messageId?: string }): ScriptedHandler => async (params) => {
    const text = params.message.parts?.[0]?.text;
    if (text === 'CANCEL') return { result: { task: task('U1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], timestamp: h.at(3) }) } };
    seen.contextId ??= params.message.contextId;
    seen.messageId ??= params.message.messageId;
    await sleep(1_200);
    return { result: { task: { ...booked(seen), history: [params.message] } } };
  };

  it('no task id yet when the cancel comes: the outcome waits for the send answer, then NEEDS_ATTENTION (no compensation)', async () => {
    const { producer: p, agent } = await h.setUp((seen) => ({ SendMessage: slowBooking(seen) }));
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'slow hello', idempotencyKey: 'v6' });
    await eventually(async () => agent.count('SendMessage') === 1, 'send held by the agent', 10_000);
    await sleep(600);
    await p.cancel(id);
    const view = await workflowSettled(p, id);
    expect(view.state).toBe('NEEDS_ATTENTION');
    expect(view.attention).toMatchObject({ code: 'CANCEL_LOST_RACE', delegationId: 'main.1' });
    expect(view.steps[0]!.attempts[0]!.state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
  });

  it('with a compensation: the completed work is undone once (one CANCEL), then COMPENSATED', async () => {
    const { producer: p, agent } = await h.setUp((seen) => ({ SendMessage: slowBooking(seen) }));
    const { id } = await p.startWorkflow({
      workflowId: 'v6-compensated',
      steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'slow hello' }, compensation: { agent: agent.cardUrl, message: { text: 'CANCEL' } } }],
    });
    await eventually(async () => agent.count('SendMessage') === 1, 'send held by the agent', 10_000);
    await sleep(600);
    await p.cancel(id);
    const view = await eventually(async () => {
      const current = await p.get(id);
      return !['RUNNING', 'COMPENSATING'].includes(current.state) && current;
    }, 'workflow settled', 20_000);
    expect(view.state).toBe('COMPENSATED');
    const cancels = agent.requests.filter((request) => request.method === 'SendMessage' && request.params.message.parts?.[0]?.text === 'CANCEL');
    expect(cancels).toHaveLength(1);
    expect(view.steps[0]!.compensations).toHaveLength(1);
    expect(view.steps[0]!.compensations[0]!.state).toBe('COMPLETED');
  });
});

describe('RT1: a step named like a compensation', () => {
  it('a name that could collide with a compensation id is refused by the producer library before anything is written', async () => {
    const prefix = h.newPrefix();
    const a = await h.agentWith({});
    const p = h.producer(prefix);
    const attempt = p.startWorkflow({
      workflowId: 'rt1-refused',
      steps: [
        { name: 'flight', agent: a.cardUrl, message: { text: 'BOOK flight' }, compensation: { agent: a.cardUrl, message: { text: 'CANCEL' } } },
        { name: 'undo.flight', agent: a.cardUrl, message: { text: 'BOOK lookalike' } },
      ],
    });
    await expect(attempt).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('steps.1.name') });
    await expect(p.get('rt1-refused')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(a.requests).toHaveLength(0);
  });

  it('A receives exactly one CANCEL (for flight), and the workflow is COMPENSATED only because it ran (compensations found by kind)', async () => {
    const prefix = h.newPrefix();
    const answer: ScriptedHandler = (params) => {
      const state = params.message.parts?.[0]?.text === 'REJECT' ? 'REJECTED' : 'COMPLETED';
      return { result: { task: task(`T-${params.message.messageId}`, state, { contextId: params.message.contextId, history: [params.message], timestamp: h.at(1) }) } };
    };
    const a = await h.agentWith({ SendMessage: answer });
    const b = await h.agentWith({ SendMessage: answer });
    const p = h.producer(prefix);
    await h.fleetFor(prefix);
    const { id } = await p.startWorkflow({
      workflowId: 'rt1',
      maxAttemptsPerStep: 1,
      steps: [
        { name: 'flight', agent: a.cardUrl, message: { text: 'BOOK flight' }, compensation: { agent: a.cardUrl, message: { text: 'CANCEL' } } },
        { name: 'flight_undo', agent: a.cardUrl, message: { text: 'BOOK lookalike' } },
        { name: 'last', agent: b.cardUrl, message: { text: 'REJECT' } },
      ],
    });
    const view = await eventually(async () => {
      const current = await p.get(id);
      return !['RUNNING', 'COMPENSATING'].includes(current.state) && current;
    }, 'workflow settled', 20_000);
    const texts = a.requests.filter((request) => request.method === 'SendMessage').map((request) => request.params.message.parts[0].text);
    expect(texts.filter((text) => text === 'CANCEL')).toHaveLength(1);
    expect(view.state).toBe('COMPENSATED');
    const flight = view.steps.find((step) => step.name === 'flight')!;
    expect(flight.compensations).toHaveLength(1);
    expect(flight.compensations[0]).toMatchObject({ kind: 'compensation', state: 'COMPLETED' });
    expect(flight.compensations[0]!.delegationId).not.toBe(view.steps.find((step) => step.name === 'flight_undo')!.attempts[0]!.delegationId);
    expect(view.steps.find((step) => step.name === 'flight_undo')!.compensations).toEqual([]);
  });
});
