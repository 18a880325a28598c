/**
 * Red-team round 10: agent answers of the kinds of field cases A31–A38 (../shared/cases/field-reports-3.md) that the
 * case tests do not use. Real redis-server, real fleet, scripted raw JSON-RPC agents (exact bytes).
 */
import { describe, expect, it } from 'vitest';
import { artifactText, finished, useFieldCases, viewOf, recordOf } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { AU, SU, ev, task, taskEvent, userMessage } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** A streaming send answered with `frames` (then `endAfter`); GetTask reads T1 COMPLETED with a1: COMPLETED with a1, one send. */
async function streamingSendCompletes(frames: (params: any) => string[], endAfter: 'close' | 'destroy' = 'close'): Promise<void> {
  const { producer, agent, id } = await h.setUpAndDelegate(
    () => ({
      SendStreamingMessage: (params) => ({ sse: frames(params), endAfter }),
      GetTask: () => ({ result: task('T1', 'COMPLETED', { artifacts: { a1: 'booked' } }) }),
    }),
    { streamingSends: true },
  );
  const record = await finished(producer, id, 30_000);
  expect(record.state).toBe('COMPLETED');
  expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked');
  expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
}

describe('attack10/attack12: a search that finds tasks in our own context', () => {
  /** An agent that stores our message under an id of its own; `ids`: the tasks it keeps in our context. */
  async function agentKeeping(ids: string[]) {
    let contextId = '';
    const agentTask = (id: string) => task(id, 'COMPLETED', { contextId, history: [userMessage(`agent-assigned-${id}`, 'go')], artifacts: { a1: `booked by ${id}` } });
    const agent = await h.agentWith({
      SendMessage: () => ({ result: { task: agentTask(ids[0]!) } }),
      ListTasks: (params) => ({ result: { tasks: params.contextId === contextId ? ids.map(agentTask) : [], nextPageToken: '', pageSize: 50, totalSize: ids.length } }),
      GetTask: (params) => ({ result: agentTask(params.id) }),
    });
    const { producer, id } = await h.sentNotRecorded(agent, () => undefined);
    contextId = (await recordOf(producer, id))!.requestedContextId!;
    return { agent, producer, id };
  }

  it('ListTasks by our context lists one finished task whose user message carries an id the agent assigned: adopted (COMPLETED with its artifact), never resent', async () => {
    const { agent, producer, id } = await agentKeeping(['T1']);
    // The only task in the context we sent (a fresh one per delegation), read in full: ours, as our context proves a send answer ours.
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    expect(record.taskId).toBe('T1');
    expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked by T1');
    expect(agent.count('SendMessage')).toBe(0);
    expect(agent.count('GetTask')).toBeGreaterThan(0);
  }, 45_000);

  it('two tasks in our context, neither holding our messageId: a person decides (AMBIGUOUS), never resent', async () => {
    const { agent, producer, id } = await agentKeeping(['T1', 'T2']);
    await eventually(async () => (await recordOf(producer, id))?.state === 'AMBIGUOUS' || agent.count('SendMessage') > 0, 'a verdict', 30_000);
    expect(agent.count('SendMessage')).toBe(0);
    const record = await recordOf(producer, id);
    expect(record?.state).toBe('AMBIGUOUS');
    expect(record?.taskId).toBeUndefined();
  }, 45_000);
});

describe('attack10: a streaming send whose stream goes on after the terminal status', () => {
  it('COMPLETED with the artifact, then a garbage frame: COMPLETED with the artifact, one send', () =>
    streamingSendCompletes((params) => [
      taskEvent(task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message] })),
      ev(AU('a1', false, true, 'booked', { contextId: params.message.contextId })),
      ev(SU('COMPLETED', { contextId: params.message.contextId })),
      'data: {"jsonrpc":"2.0","id":1,"result":{"statusUpd\n\n',
      ev('<<<garbage>>>'),
    ]), 45_000);

  it('a stream answer whose first frame is our Task COMPLETED with the artifact, then the connection cut: COMPLETED, one send', () =>
    streamingSendCompletes((params) => [taskEvent(task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked' } })), 'data: {"jsonrpc"'], 'destroy'), 45_000);
});

describe('attack10: unreadable answers on the streaming send', () => {
  const bodies: [string, number, string, string][] = [
    ['200 text/html page', 200, 'text/html', '<html><body>OK</body></html>'],
    ['200 application/json truncated', 200, 'application/json', '{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"T1","contextId":"'],
    ['200 text/event-stream with only a comment', 200, 'text/event-stream', ': keep-alive\n\n'],
  ];
  for (const [name, status, type, body] of bodies) {
    it(`${name}: the agent may have the task: found by the search and adopted, the same messageId only`, async () => {
      let messageId = '';
      let contextId = '';
      const theTask = () => task('T1', 'COMPLETED', { contextId, history: [userMessage(messageId)], artifacts: { a1: 'booked' } });
      const { producer, agent, id } = await h.setUpAndDelegate(
        () => ({
          SendStreamingMessage: (params) => ((messageId = params.message.messageId), (contextId = params.message.contextId), { http: { status, body, headers: { 'content-type': type } } }),
          SendMessage: (params) => ((messageId = params.message.messageId), (contextId = params.message.contextId), { http: { status, body, headers: { 'content-type': type } } }),
          ListTasks: () => ({ result: { tasks: messageId ? [theTask()] : [], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
          GetTask: () => ({ result: theTask() }),
        }),
        { streamingSends: true, reconcileIntervalMs: 300 },
      );
      const record = await finished(producer, id, 30_000);
      expect(record.state).toBe('COMPLETED');
      expect(artifactText(await viewOf(producer, id), 'a1')).toBe('booked');
      expect(agent.count('SendStreamingMessage') + agent.count('SendMessage')).toBe(1);
    }, 45_000);
  }
});

describe('attack10: a result taken back by a later Task snapshot', () => {
  // Where the Task with "artifacts": [] comes: after the artifact update, or after it and a WORKING status.
  const variants: [string, (contextId: string) => string[]][] = [
    ['right after the artifact update', (contextId) => [ev(AU('a1', false, true, 'booked', { contextId })), taskEvent(task('T1', 'WORKING', { contextId, artifacts: [] }))]],
    ['after a WORKING status update', (contextId) => [ev(AU('a1', false, true, 'booked', { contextId })), ev(SU('WORKING', { contextId })), taskEvent(task('T1', 'WORKING', { contextId, artifacts: [] }))]],
  ];
  for (const [name, middle] of variants) {
    it(`stream: artifact a1, a Task WORKING with "artifacts": [] ${name}, then COMPLETED: the record holds a1 (read in full)`, () =>
      streamingSendCompletes((params) => [
        taskEvent(task('T1', 'SUBMITTED', { contextId: params.message.contextId, history: [params.message] })),
        ...middle(params.message.contextId),
        ev(SU('COMPLETED', { contextId: params.message.contextId })),
      ]), 45_000);
  }
});
