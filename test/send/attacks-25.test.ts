/**
 * Attack round 25: a cancel before the first read of a task a Message answer named. SendMessage answers an agent
 * Message in our context naming task "T9": the row is bound to T9 and flagged unread (`namedTaskUnread`), and the first
 * full read of T9 must show it ours (our context, or our messageId in its history) before anything of it is applied.
 * Here the follow's reads of T9 never answer, and the user cancels first: CancelTask's answer (or, after CancelTask is
 * refused with -32002 TaskNotCancelable, the GetTask after it) is that first full read. Real redis-server, real fleet,
 * a scripted raw JSON-RPC agent (exact bytes). The property over every path of the first read is in
 * packages/workers/test/named-task-read-property.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { finished, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { agentMessage, task } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const fast = { reconcileIntervalMs: 300, followBackoff: { baseMs: 200, capMs: 1_000 } };
const noTasks = () => ({ result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } });
const NOT_CANCELABLE = { error: { code: -32002, message: 'Task cannot be canceled' } } as const;

/** Another client's T9: context ctx-other, its history only that client's message, its artifact "their booking". */
const theirs = (state: 'COMPLETED' | 'CANCELED') =>
  task('T9', state, { contextId: 'ctx-other', history: [{ role: 'ROLE_USER', messageId: 'someone-else', parts: [{ text: 'book' }] }], artifacts: { a1: 'their booking' } });

/**
 * One delegation whose SendMessage answers an agent Message in our context naming T9; SubscribeToTask never answers,
 * GetTask never answers until CancelTask was called (then `afterCancel`); the row is bound to T9 before it returns.
 */
async function namedThenCancel(cancel: (message: any) => { result: unknown } | typeof NOT_CANCELABLE, afterCancel: (message: any) => unknown) {
  let message: any;
  let canceled = false;
  const { producer: p, agent, id } = await h.setUpAndDelegate(
    () => ({
      SendMessage: (params) => ((message = params.message), { result: { message: agentMessage('working on it in T9', { taskId: 'T9', contextId: params.message.contextId }) } }),
      SubscribeToTask: () => ({ hang: true }),
      GetTask: () => (canceled ? { result: afterCancel(message) } : { hang: true }),
      CancelTask: () => ((canceled = true), cancel(message)),
      ListTasks: noTasks,
    }),
    fast,
  );
  const bound = await eventually(async () => {
    const row = await p.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
    return row?.taskId === 'T9' ? row : undefined;
  }, 'bound to T9', 20_000);
  expect(bound.namedTaskUnread).toBe(true);
  await p.cancel(id);
  return { p, agent, id };
}

describe('attack 25: a cancel before the first read of a task a Message answer named', () => {
  /*
   * FINDING (another client's result taken for ours; kind: a whole Task applied to a flagged row without the ownership
   * judgement the reads get). Input: the Message names T9; the follow's reads of T9 hang; producer.cancel; CancelTask
   * answers -32002 TaskNotCancelable, and the GetTask after it answers T9 COMPLETED in ctx-other with another client's
   * message and artifact "their booking". Observed: COMPLETED, the view holding "their booking". Expected: the first
   * full read of a named task is judged whatever call brought it: not ours, FOREIGN_TASK noted and a person (AMBIGUOUS),
   * nothing of it journaled. Fault: core/transitions.ts `cancel-answered` wrote the snapshot checking only the task id
   * (`namedTaskNotOurs` was called by the task-read, search and stream rows only). Fixed: every Task a step applies to a
   * flagged row is judged in one place (transitions.ts `namedTaskJudged`).
   */
  it('CancelTask refused, the GetTask after it shows another client\'s T9: AMBIGUOUS, never COMPLETED with "their booking"', async () => {
    const { p, agent, id } = await namedThenCancel(() => NOT_CANCELABLE, () => theirs('COMPLETED'));
    const record = await finished(p, id, 40_000);
    expect(agent.count('CancelTask')).toBeGreaterThanOrEqual(1);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error?.message ?? '').toContain('T9');
    expect(JSON.stringify(await viewOf(p, id))).not.toContain('their booking');
  }, 60_000);

  /* FINDING (the same fault): CancelTask answers another client's T9 itself. Observed: COMPLETED (or CANCELED) from it. Fixed as above. */
  it.each(['COMPLETED', 'CANCELED'] as const)('CancelTask answers another client\'s T9 (%s): AMBIGUOUS, nothing of it journaled', async (state) => {
    const { p, id } = await namedThenCancel(() => ({ result: theirs(state) }), () => theirs(state));
    const record = await finished(p, id, 40_000);
    expect(record.state).toBe('AMBIGUOUS');
    expect(JSON.stringify(await viewOf(p, id))).not.toContain('their booking');
  }, 60_000);

  it.each([
    ['our context', 'context'],
    ['our messageId in its history', 'history'],
  ] as const)('the honest agent: T9 shown ours by %s, the cancel applies as for any task of ours', async (_how, by) => {
    const ours = (message: any, state: 'CANCELED' | 'COMPLETED') =>
      task('T9', state, {
        contextId: by === 'context' ? message.contextId : 'ctx-agent-chosen',
        history: by === 'history' ? [message] : [{ role: 'ROLE_USER', messageId: 'another-turn', parts: [{ text: 'x' }] }],
        ...(state === 'COMPLETED' ? { artifacts: { a1: 'booked' } } : {}),
      });
    // CancelTask accepted: CANCELED.
    const accepted = await namedThenCancel((message) => ({ result: ours(message, 'CANCELED') }), (message) => ours(message, 'CANCELED'));
    expect((await finished(accepted.p, accepted.id, 40_000)).state).toBe('CANCELED');
    // CancelTask refused, the task finished first: COMPLETED with its result.
    const refused = await namedThenCancel(() => NOT_CANCELABLE, (message) => ours(message, 'COMPLETED'));
    expect((await finished(refused.p, refused.id, 40_000)).state).toBe('COMPLETED');
    expect(JSON.stringify(await viewOf(refused.p, refused.id))).toContain('booked');
  }, 90_000);
});
