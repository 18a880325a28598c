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

describe('attack10: a search that finds a task in our own context', () => {
  it('ListTasks by our context lists a finished task whose user message carries an id the agent assigned: never resent', async () => {
    let contextId = '';
    const agentTask = () => task('T1', 'COMPLETED', { contextId, history: [userMessage('agent-assigned-id', 'go')], artifacts: { a1: 'booked' } });
    const agent = await h.agentWith({
      SendMessage: (params) => ({ result: { task: agentTask() } }),
      ListTasks: (params) => ({ result: { tasks: params.contextId === contextId ? [agentTask()] : [], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      GetTask: () => ({ result: agentTask() }),
    });
    const { producer, id } = await h.sentNotRecorded(agent, () => undefined);
    contextId = (await recordOf(producer, id))!.requestedContextId!;
    // The search lists and reads the task, and never concludes "not found": a person decides, nothing is resent.
    await eventually(async () => (await recordOf(producer, id))?.state === 'AMBIGUOUS' || agent.count('SendMessage') > 0, 'a verdict', 30_000);
    expect(agent.count('SendMessage')).toBe(0);
    expect((await recordOf(producer, id))?.state).toBe('AMBIGUOUS');
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
