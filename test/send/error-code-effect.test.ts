/**
 * A JSON-RPC error code the spec does not define (an HTTP status a proxy put in `code`, a code of the
 * implementation-defined range under an ErrorInfo reason) proves delivery, not that nothing was created (attack23):
 * its effect is `maybe`, so the search by our messageId decides. Found: the task is adopted, never sent twice (by a
 * second agent, a streaming send's plain fallback). Conclusively not found: the error answer
 * created nothing (V5), so an honest refusal still ends the attempt FAILED at the cost of one search, not a person.
 * Real redis-server, real fleet, scripted raw JSON-RPC agents.
 */
import { describe, expect, it } from 'vitest';
import { artifactText, finished, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { task, type ScriptedAnswer } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const start = h.setUpAndDelegate;

const errorInfo = (reason: string) => [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' }];

/** An agent that books on `method` (records our message), answers `answer`, and lists and reads its COMPLETED task T1. */
function bookingThenAnswering(method: 'SendMessage' | 'SendStreamingMessage', answer: ScriptedAnswer, bookings: string[]) {
  let message: any;
  const completed = () => task('T1', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: { a1: 'booked' } });
  return {
    [method]: (params: any) => ((message = params.message), bookings.push(params.message.messageId), answer),
    ListTasks: (params: any) => ({ result: { tasks: message ? [task('T1', 'COMPLETED', { contextId: params.contextId ?? message.contextId, history: [message] })] : [], nextPageToken: '', pageSize: 50, totalSize: message ? 1 : 0 } }),
    GetTask: () => ({ result: completed() }),
  };
}

describe('an error code outside the spec after the agent acted: the search adopts the task', () => {
  it('a streaming send answered code 405 (MethodNotFound by an HTTP status in code): no plain SendMessage fallback, T1 adopted, one booking', async () => {
    const bookings: string[] = [];
    const { producer: p, agent, id } = await start(
      () => ({ ...bookingThenAnswering('SendStreamingMessage', { error: { code: 405, message: 'Method Not Allowed' } }, bookings), SendMessage: (params: any) => (bookings.push(params.message.messageId), { error: { code: -32603, message: 'booked again' } }) }),
      { streamingSends: true, reconcileIntervalMs: 300 },
    );
    const record = await finished(p, id, 30_000);
    expect(record).toMatchObject({ state: 'COMPLETED', taskId: 'T1' });
    expect(artifactText(await viewOf(p, id), 'a1')).toBe('booked');
    expect(bookings).toHaveLength(1);
    expect(agent.count('SendMessage')).toBe(0);
  }, 45_000);
});

describe('an error code outside the spec from an agent that did nothing: one search, then FAILED (no person)', () => {
  const honest: [string, ScriptedAnswer, string][] = [
    ['code 404', { error: { code: 404, message: 'Not Found' } }, 'TASK_NOT_FOUND'],
    ['-32050 with reason TASK_NOT_FOUND', { error: { code: -32050, message: 'no such task', data: errorInfo('TASK_NOT_FOUND') } }, 'TASK_NOT_FOUND'],
  ];
  for (const [name, answer, code] of honest) {
    it(`${name}, the agent lists no task: searched, FAILED with the agent's error, one SendMessage`, async () => {
      const { producer: p, agent, id } = await start(
        () => ({ SendMessage: () => answer, ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }) }),
        { reconcileIntervalMs: 300 },
      );
      const record = await finished(p, id, 30_000);
      expect(record.state).toBe('FAILED');
      expect(record.error?.code).toBe(code);
      expect(agent.count('SendMessage')).toBe(1);
      expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
    }, 45_000);
  }

  it('control: the spec\'s own -32602 is a refusal: FAILED without a search', async () => {
    const { producer: p, agent, id } = await start(() => ({ SendMessage: () => ({ error: { code: -32602, message: 'Invalid params' } }) }), { reconcileIntervalMs: 300 });
    const record = await finished(p, id, 30_000);
    expect(record).toMatchObject({ state: 'FAILED', error: { code: 'INVALID_PARAMS' } });
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('ListTasks')).toBe(0);
  }, 45_000);

  it('the spec\'s own -32001 to a SendMessage naming no task (attack28): no refusal of ours, one search, then FAILED', async () => {
    const { producer: p, agent, id } = await start(
      () => ({ SendMessage: () => ({ error: { code: -32001, message: 'Task not found' } }), ListTasks: () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } }) }),
      { reconcileIntervalMs: 300 },
    );
    const record = await finished(p, id, 30_000);
    expect(record).toMatchObject({ state: 'FAILED', error: { code: 'TASK_NOT_FOUND' } });
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
  }, 45_000);
});
