/**
 * Property (attack 23, a fact in a Message answer not read): for any direct Message answering our send, on the
 * SendMessage answer and on a send stream's first event (`answerObservation` → `messageAnswerProof` → the
 * `send-answered` row), whatever its role, context and taskId and whatever context and task the row holds:
 *   - COMPLETED is written only from a plain reply shown ours: the agent's role, our context (or none to compare),
 *     no taskId; its context journaled only then;
 *   - a Message naming a task of ours never settles: the row is bound to that task, unfinished, and routed (the
 *     follow reads it), so the named task is always read before anything completes;
 *   - anything else is not ours: delivery received (FOREIGN_TASK noted, the answer unreadable) and the reconciler
 *     searches: no outcome, no binding, no resend.
 * The end-to-end cases are in test/send/attacks-23.test.ts and test/send/message-answer.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import type { Policy } from '../src/delegation/core/policy.ts';
import { transition, type Write } from '../src/delegation/core/transitions.ts';
import { answerObservation } from '../src/delegation/runs/send.ts';

const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3, sendSettleMs: 31_000 } as unknown as Policy;

type Role = 'ROLE_AGENT' | 'ROLE_USER';
type Context = 'ours' | 'other' | 'empty' | 'absent';
type Named = 'absent' | 'empty' | 'new' | 'held' | 'other';

interface Case {
  role: Role;
  context: Context;
  named: Named;
  /** The row already holds task T-held (a resend after a task was bound): else none. */
  rowHoldsTask: boolean;
  /** We sent a context (C-ours), or left it to the agent; `refused`: the agent refused ours before (sent without). */
  asked: 'sent' | 'none' | 'refused';
  via: 'answer' | 'stream';
}

const caseArbitrary: fc.Arbitrary<Case> = fc.record({
  role: fc.constantFrom<Role>('ROLE_AGENT', 'ROLE_USER'),
  context: fc.constantFrom<Context>('ours', 'other', 'empty', 'absent'),
  named: fc.constantFrom<Named>('absent', 'empty', 'new', 'held', 'other'),
  rowHoldsTask: fc.boolean(),
  asked: fc.constantFrom<Case['asked']>('sent', 'none', 'refused'),
  via: fc.constantFrom<Case['via']>('answer', 'stream'),
});

const recordOf = (c: Case): DelegationRecord =>
  ({
    workflowId: 'wf',
    delegationId: 'main.1',
    step: 'main',
    kind: 'step',
    messageId: 'M-ours',
    ...(c.asked === 'none' ? {} : { requestedContextId: 'C-ours' }),
    contextRefused: c.asked === 'refused',
    ...(c.rowHoldsTask ? { taskId: 'T-held' } : {}),
    state: 'INTENT',
    message: { parts: [{ text: 'book' }] },
    createdAt: 4_000_000,
    sendStartedAt: 4_900_000,
    resendCount: 0,
    version: 7,
    fence: 2,
  }) as unknown as DelegationRecord;

const taskIdOf = (named: Named): string | undefined => ({ absent: undefined, empty: '', new: 'T9', held: 'T-held', other: 'T-other' })[named];
const contextOf = (context: Context): string | undefined => ({ ours: 'C-ours', other: 'C-someone-else', empty: '', absent: undefined })[context];

const messageOf = (c: Case): Message => {
  const taskId = taskIdOf(c.named);
  const contextId = contextOf(c.context);
  return { messageId: 'agent-1', role: c.role, parts: [{ text: 'working on it' }], ...(taskId !== undefined ? { taskId } : {}), ...(contextId !== undefined ? { contextId } : {}) } as Message;
};

const writesOf = (write: Write | readonly [Write, Write] | undefined): Write[] => (write === undefined ? [] : Array.isArray(write) ? [...write] : [write as Write]);

describe('a direct Message answer: completed only from a plain reply shown ours; a named task read first', () => {
  it('holds for every role, context, taskId and row, on the SendMessage answer and the send stream', () => {
    fc.assert(
      fc.property(caseArbitrary, (c) => {
        const record = recordOf(c);
        const message = messageOf(c);
        const step = transition(record, answerObservation(record, { message }, c.via), policy);
        const writes = writesOf(step.write);
        const askedContext = c.asked === 'sent' ? 'C-ours' : undefined;
        const contextId = contextOf(c.context) || undefined;
        const taskId = taskIdOf(c.named) || undefined;
        const foreignContext = contextId !== undefined && askedContext !== undefined && contextId !== askedContext;
        const foreignTask = taskId !== undefined && c.rowHoldsTask && taskId !== 'T-held';
        const shownOurs = c.role === 'ROLE_AGENT' && !foreignContext && !foreignTask;

        const completed = writes.some((write) => write.kind === 'outcome' && write.state === 'COMPLETED');
        expect(completed).toBe(shownOurs && taskId === undefined);
        for (const write of writes) {
          // No outcome of any kind from a Message but the plain reply's COMPLETED; never a foreign context journaled.
          if (write.kind === 'outcome') expect(write.state).toBe('COMPLETED');
          if (write.kind === 'outcome' && write.contextId !== undefined) expect(foreignContext).toBe(false);
          expect(write.kind).not.toBe('release-for-resend');
        }
        if (!shownOurs) {
          expect(step).toEqual({ write: { kind: 'note-send-error', error: expect.objectContaining({ code: 'FOREIGN_TASK', delivery: 'received', answer: 'unreadable' }) }, next: { kind: 'ask-reconciler' } });
        } else if (taskId !== undefined) {
          // The named task: bound (unless the row already holds it) as not yet read, and routed for the follow to read.
          expect(step.next).toEqual({ kind: 'route', plan: { again: false } });
          if (taskId === record.taskId) expect(writes).toEqual([]);
          else expect(writes).toEqual([{ kind: 'snapshot', task: expect.objectContaining({ id: taskId, status: { state: 'TASK_STATE_SUBMITTED' } }), guard: 'none', bindAgent: true }]);
        }
      }),
      {
        numRuns: 400,
        examples: [
          // The two findings: a Message naming T9 in our context; one in another context naming another task.
          [{ role: 'ROLE_AGENT', context: 'ours', named: 'new', rowHoldsTask: false, asked: 'sent', via: 'answer' }],
          [{ role: 'ROLE_AGENT', context: 'other', named: 'other', rowHoldsTask: false, asked: 'sent', via: 'answer' }],
          // The plain reply, kept: our context, or none sent, no taskId.
          [{ role: 'ROLE_AGENT', context: 'ours', named: 'absent', rowHoldsTask: false, asked: 'sent', via: 'answer' }],
          [{ role: 'ROLE_AGENT', context: 'other', named: 'absent', rowHoldsTask: false, asked: 'none', via: 'answer' }],
          // An echo of ours (role user), on the stream; a Message about another task than the one we hold.
          [{ role: 'ROLE_USER', context: 'ours', named: 'absent', rowHoldsTask: false, asked: 'sent', via: 'stream' }],
          [{ role: 'ROLE_AGENT', context: 'ours', named: 'other', rowHoldsTask: true, asked: 'sent', via: 'stream' }],
          [{ role: 'ROLE_AGENT', context: 'empty', named: 'held', rowHoldsTask: true, asked: 'refused', via: 'answer' }],
        ],
      },
    );
  });
});
