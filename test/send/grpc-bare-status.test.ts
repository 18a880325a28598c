/**
 * FINDING (grpcstatus; kind: a gRPC status without A2A proof of refusal read as "nothing created").
 * Input: a workflow {maxAttemptsPerStep: 2, one step by skill}, two @a2a-js/sdk gRPC agents with the skill; each runs
 * SendMessage's handler (the task is created and completes: the agent booked), then answers a bare status: NOT_FOUND,
 * UNIMPLEMENTED, INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE, with no `google.rpc.ErrorInfo` in the status
 * details (a proxy's answer for a route it does not know, an interceptor's, a server that threw after booking).
 * Observed (before): the status alone was read as a refusal (`GRPC_REFUSING_STATUSES`): FAILED at once, no search,
 * the step went to the second agent: two bookings. Expected: as on the HTTP bindings, only the binding's A2A error
 * refuses (the gRPC binding carries an ErrorInfo whose reason is of the spec's table, spec §10.6, §5.4), or a
 * credentials status; the rest is effect maybe and the search by our messageId adopts the task: one SendMessage,
 * one booking, COMPLETED. Controls: the same status with the spec's ErrorInfo, before any handler, is still a
 * refusal (FAILED, no search); a bare status before any handler costs one search, then FAILED; UNAUTHENTICATED is
 * asked again at the same agent, then a person (AMBIGUOUS AUTH), never a second agent.
 * Real redis-server, real fleet, real gRPC agents (test/harness/grpc-agent.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { finishedAttempt } from '../harness/holders.ts';
import { useFieldCases, workflowSettled } from '../harness/field-cases.ts';
import { startGrpcAgent, type GrpcAgentHandle, type GrpcSendAnswer } from '../harness/grpc-agent.ts';

const h = useFieldCases();
const agents: GrpcAgentHandle[] = [];
afterEach(async () => {
  await h.closeFleetsAndProducers();
  await Promise.all(agents.splice(0).map((agent) => agent.stop()));
});

/** A gRPC agent (sdk 1.3.0) whose every SendMessage gets `answer`. */
async function agentAnswering(answer: GrpcSendAnswer): Promise<GrpcAgentHandle> {
  const agent = await startGrpcAgent();
  agents.push(agent);
  agent.answerSendsWith(answer);
  return agent;
}

/** Registers `registered`, starts a fleet and a workflow of one step by skill with `maxAttemptsPerStep`; returns the producer and the workflow id. */
async function oneStepBySkill(registered: GrpcAgentHandle[], name: string, maxAttemptsPerStep: number) {
  const prefix = h.newPrefix();
  const producer = h.producer(prefix);
  for (const agent of registered) await producer.registerAgent(agent.cardUrl);
  await h.fleetFor(prefix, { reconcileIntervalMs: 300, followBackoff: { baseMs: 50, capMs: 200 } });
  const workflowId = `${name}-${prefix}`;
  await producer.startWorkflow({ workflowId, maxAttemptsPerStep, steps: [{ name: 'main', skill: 'demo', message: { text: 'book' } }] });
  return { producer, workflowId };
}

const sends = (agent: GrpcAgentHandle) => agent.requestCount('SendMessage');

describe('a gRPC agent that booked, then answered a bare status (no ErrorInfo)', () => {
  const BARE: [string, number][] = [['NOT_FOUND', 5], ['UNIMPLEMENTED', 12], ['INVALID_ARGUMENT', 3], ['FAILED_PRECONDITION', 9], ['OUT_OF_RANGE', 11]];
  for (const [name, code] of BARE) {
    it(`${name}: its task adopted by our messageId, the second agent never gets a SendMessage (before: re-delegated, two bookings)`, async () => {
      const first = await agentAnswering({ code, afterHandler: true });
      const second = await agentAnswering({ code, afterHandler: true });
      const { producer, workflowId } = await oneStepBySkill([first, second], name.toLowerCase(), 2);
      const view = await workflowSettled(producer, workflowId, 40_000);
      expect(sends(first) + sends(second)).toBe(1);
      expect(first.sendMessageCount() + second.sendMessageCount()).toBe(1);
      const booked = sends(first) === 1 ? first : second;
      expect(booked.requestCount('ListTasks')).toBeGreaterThanOrEqual(1);
      expect(view.steps[0]!.attempts).toHaveLength(1);
      expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED' });
      expect(view.steps[0]!.attempts[0]!.taskId).toBeTruthy();
    }, 60_000);
  }
});

describe('controls: what still refuses, and what an honest bare refusal costs', () => {
  it('UNIMPLEMENTED with the spec\'s ErrorInfo (UNSUPPORTED_OPERATION) before any handler: FAILED at once, no search', async () => {
    const agent = await agentAnswering({ code: 12, reason: 'UNSUPPORTED_OPERATION', afterHandler: false });
    const { producer, workflowId } = await oneStepBySkill([agent], 'refusal', 1);
    const row = await finishedAttempt(producer, workflowId, 40_000);
    expect(row).toMatchObject({ state: 'FAILED', error: { code: 'UNSUPPORTED_OPERATION' } });
    expect(sends(agent)).toBe(1);
    expect(agent.requestCount('ListTasks')).toBe(0);
  }, 60_000);

  it('a bare NOT_FOUND before any handler (nothing booked): one search that lists nothing of ours, then FAILED', async () => {
    const agent = await agentAnswering({ code: 5, afterHandler: false });
    const { producer, workflowId } = await oneStepBySkill([agent], 'honest', 1);
    const row = await finishedAttempt(producer, workflowId, 40_000);
    expect(row).toMatchObject({ state: 'FAILED' });
    expect(sends(agent)).toBe(1);
    expect(agent.sendMessageCount()).toBe(0);
    expect(agent.requestCount('ListTasks')).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('a bare UNAUTHENTICATED: asked again at the same agent, then a person (AMBIGUOUS AUTH); never a second agent', async () => {
    const first = await agentAnswering({ code: 16, afterHandler: false });
    const second = await agentAnswering({ code: 16, afterHandler: false });
    const { producer, workflowId } = await oneStepBySkill([first, second], 'auth', 2);
    const row = await finishedAttempt(producer, workflowId, 40_000);
    expect(row).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'AUTH' } });
    expect(Math.min(sends(first), sends(second))).toBe(0);
    expect(Math.max(sends(first), sends(second))).toBeGreaterThan(1);
  }, 60_000);
});
