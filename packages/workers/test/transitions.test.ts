/**
 * The delegation core's table (`core/transitions.ts`) without Redis: every (journal state × observation kind) pair
 * has exactly one next, and the rows that carry the three facts (delivery, ownership, effect) decide by them.
 * Property tests per kind: whatever the facts, an answer that arrived is never re-delegated blind, a summary never
 * settles a task, and TaskNotFound from any call is the same row.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isTerminalTaskState, type Task, type TaskState } from '@durable-a2a/a2a';
import { JOURNAL_STATES, type DelegationRecord, type JournalState } from '@durable-a2a/shared';
import { OBSERVATION_KINDS, unprocessedAnswer, type AgentCall, type Observation, type ObservationKind } from '../src/delegation/core/observation.ts';
import { OUTCOME_CODES } from '../src/delegation/core/outcomes.ts';
import { progressNext, routeOf, type Policy } from '../src/delegation/core/policy.ts';
import { transition, type Step, type Write } from '../src/delegation/core/transitions.ts';
import type { NextKind } from '../src/delegation/core/next.ts';

const NOW = 1_800_000_000_000;
const policy: Policy = {
  now: () => NOW,
  random: () => 0.5,
  followBackoff: { baseMs: 500, capMs: 30_000 },
  unreachableBackoff: { baseMs: 1_000, capMs: 30_000 },
  slowPollAfterMs: 60_000,
  slowPollMs: 60_000,
  noProgressWindowMs: 1_800_000,
  unacceptableAnswerLimit: 3,
  reconcileIntervalMs: 30_000,
  notFoundThreshold: 3,
  notFoundWindowMs: 30_000,
  sendAttempts: 3,
  sendSettleMs: 31_000,
};

const FINISHED: ReadonlySet<JournalState> = new Set(['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED', 'AMBIGUOUS', 'LOST']);

const recordIn = (state: JournalState, extra: Partial<DelegationRecord> = {}): DelegationRecord =>
  ({
    workflowId: 'wf',
    delegationId: 'main.1',
    step: 'main',
    kind: 'step',
    attempt: 1,
    agentCardUrl: 'http://127.0.0.1:1/.well-known/agent-card.json',
    messageId: 'M1',
    requestedContextId: 'C1',
    contextRefused: false,
    state,
    message: { parts: [{ text: 'book' }] },
    protocolErrorCount: 0,
    push: false,
    held: false,
    createdAt: NOW - 10_000,
    updatedAt: NOW - 5_000,
    sendCount: state === 'INTENT' ? 0 : 1,
    resendCount: 0,
    unreachableCount: 0,
    unsentTries: 0,
    provenAbsentSends: 0,
    version: 7,
    fence: 2,
    notFoundCount: 0,
    noProgressCount: 0,
    ...(state === 'INTENT' ? { sendStartedAt: NOW - 40_000 } : { taskId: 'T1', contextId: 'C1', sendStartedAt: NOW - 9_000 }),
    ...extra,
  }) as DelegationRecord;

const task = (state: TaskState, extra: Partial<Task> = {}): Task => ({ id: 'T1', contextId: 'C1', status: { state }, history: [{ messageId: 'M1', role: 'ROLE_USER', parts: [{ text: 'book' }] }], ...extra });
const limit = { code: 'LIMIT_EXCEEDED' as const, message: 'bodyBytes limit of 8388608 exceeded', limit: 'bodyBytes' };

/** One representative observation per kind: the compiler refuses a kind without one. */
const SAMPLES: { [K in ObservationKind]: Extract<Observation, { kind: K }> } = {
  'auth-exhausted': { kind: 'auth-exhausted', rounds: 3, challenge: 'sign in at https://example.test/login' },
  'send-answered': { kind: 'send-answered', answer: { task: task('TASK_STATE_SUBMITTED') }, ownership: { kind: 'proven', by: 'context' }, via: 'answer' },
  'send-failed': { kind: 'send-failed', afterMark: true, delivery: 'maybe', effect: 'maybe', error: { code: 'SEND_FAILED', message: 'socket hang up', delivery: 'maybe' }, permanent: false, lastAttempt: false },
  'send-in-doubt': { kind: 'send-in-doubt', reason: 'marked before' },
  'stream-event': { kind: 'stream-event', responses: [{ statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } } }] },
  'stream-ended': { kind: 'stream-ended', how: 'closed' },
  'stream-failed': { kind: 'stream-failed', code: 'NETWORK_ERROR', retryable: true },
  'task-read': { kind: 'task-read', task: task('TASK_STATE_WORKING'), call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'test', cycle: true },
  'task-not-found': { kind: 'task-not-found', call: 'get-task' },
  'read-failed': { kind: 'read-failed', call: 'get-task', code: 'NETWORK_ERROR', retryable: true, why: 'test', cycle: true },
  'search-result': { kind: 'search-result', purpose: 'reconcile', deduplicates: false, finding: { kind: 'not-found', inconclusive: false, contextRefused: false, candidates: [], paginationBroken: false } },
  'reply-delivered': { kind: 'reply-delivered', replyMessageId: 'R1', ownership: { kind: 'proven', by: 'task-id' } },
  'reply-refused': { kind: 'reply-refused', replyMessageId: 'R1', message: 'refused' },
  'cancel-answered': { kind: 'cancel-answered', task: task('TASK_STATE_CANCELED'), ownership: { kind: 'proven', by: 'task-id' } },
  'cancel-before-task': { kind: 'cancel-before-task', mayHaveSent: false },
  'push-received': { kind: 'push-received', responses: [{ task: task('TASK_STATE_WORKING') }] },
  'deadline-passed': { kind: 'deadline-passed', deadlineAt: NOW - 1 },
  'question-expired': { kind: 'question-expired', questionKey: 'seq:1', expiresAt: NOW - 1, onExpiry: 'fail' },
  'verifier-missing': { kind: 'verifier-missing', verifier: 'bookings' },
  'agent-missing': { kind: 'agent-missing', skill: 'cancel-booking' },
  'handler-ran': { kind: 'handler-ran', ok: true, handler: 'refund', evidence: { id: 1 } },
  'handler-interrupted': { kind: 'handler-interrupted' },
  'effect-verified': { kind: 'effect-verified', effect: 'present', evidence: { id: 1 } },
  'row-checked': { kind: 'row-checked' },
  'task-bound-elsewhere': { kind: 'task-bound-elsewhere', reason: 'the agent named task T1, which belongs to delegation wf|other.1' },
  'suspects-unread': { kind: 'suspects-unread', lost: 1, pending: ['T9'] },
  'follow-deferred': { kind: 'follow-deferred', delayMs: 1_000, resubscription: 2, reason: 'agent-share-full' },
  'send-deferred': { kind: 'send-deferred', untilMs: NOW + 1_000, reason: 'slots-full' },
  'stream-handed-off': { kind: 'stream-handed-off', reason: 'agent-share-full' },
  'workflow-stopped': { kind: 'workflow-stopped' },
  'lease-lost': { kind: 'lease-lost' },
  closing: { kind: 'closing' },
};

const NEXT_KINDS: readonly NextKind[] = ['route', 'progress', 'settle', 'park', 'follow', 'slow-poll', 'read-once', 'search', 'ask-reconciler', 'resend', 'needs-person', 'cancel', 'cancel-workflow', 'check-later', 'retry', 'continue', 'nothing'];

const writesOf = (step: Step): Write[] => (step.write === undefined ? [] : Array.isArray(step.write) ? [...(step.write as Write[])] : [step.write as Write]);
const outcomeStates = (step: Step) => writesOf(step).flatMap((write) => (write.kind === 'outcome' ? [write.state] : []));

describe('the table: every (journal state × observation kind) pair', () => {
  it('has a sample for every observation kind', () => {
    expect(Object.keys(SAMPLES).sort()).toEqual([...OBSERVATION_KINDS].sort());
  });

  for (const state of JOURNAL_STATES) {
    for (const kind of OBSERVATION_KINDS) {
      it(`${state} × ${kind}: exactly one next`, () => {
        const record = recordIn(state);
        const step = transition(record, SAMPLES[kind], policy);
        expect(NEXT_KINDS).toContain(step.next.kind);
        if (FINISHED.has(state)) {
          // A finished row never changes again: re-settled at most, the verifier's finding its only write.
          if (kind === 'lease-lost' || kind === 'closing') expect(step.next.kind).toBe('nothing');
          else if (kind === 'effect-verified') expect(writesOf(step).map((write) => write.kind)).toEqual(['record-effect']);
          else expect(step).toEqual({ next: { kind: 'settle' } });
        }
        if (step.next.kind === 'needs-person') expect(OUTCOME_CODES).toContain(step.next.code);
      });
    }
  }
});

describe('rows', () => {
  it('A31: a SendMessage answer over a limit arrived: a person decides, never FAILED (re-delegable) nor resent', () => {
    const step = transition(recordIn('INTENT'), { ...SAMPLES['send-failed'], delivery: 'received', effect: 'maybe', error: { code: 'LIMIT_EXCEEDED', message: limit.message, delivery: 'received', limit: 'bodyBytes' }, permanent: true, unacceptable: limit }, policy);
    expect(step.next).toMatchObject({ kind: 'needs-person', code: 'LIMIT_EXCEEDED', limit: 'bodyBytes', delivery: 'received' });
    expect(outcomeStates(step)).toEqual([]);
  });

  it('before the mark, a card over a limit ends the attempt FAILED (nothing left: re-delegable)', () => {
    const step = transition(recordIn('INTENT', { sendStartedAt: undefined }), { ...SAMPLES['send-failed'], afterMark: false, delivery: 'none', effect: 'none', error: { code: 'LIMIT_EXCEEDED', message: limit.message, delivery: 'not-sent' }, permanent: true, unacceptable: limit }, policy);
    expect(outcomeStates(step)).toEqual(['FAILED']);
  });

  it('A32: a stream event over a limit is made up for by one full read; a finished task without a result of its own then goes to a person', () => {
    const refused = { ...limit, limit: 'sseEventBytes' };
    const step = transition(recordIn('WORKING'), { kind: 'stream-failed', code: 'LIMIT_EXCEEDED', retryable: false, unacceptable: refused }, policy);
    expect(step.next).toMatchObject({ kind: 'read-once', refused });
    const read = (state: TaskState, extra: Partial<Task> = {}) =>
      transition(recordIn('WORKING'), { kind: 'task-read', task: task(state, extra), call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'x', cycle: true, afterRefused: refused }, policy);
    // (a) COMPLETED without artifacts: never a result-less success.
    expect(read('TASK_STATE_COMPLETED').next).toMatchObject({ kind: 'needs-person', code: 'LIMIT_EXCEEDED', limit: 'sseEventBytes' });
    expect(writesOf(read('TASK_STATE_COMPLETED'))).toEqual([]);
    // The full read carries the result within our limits: it is the agent's own complete view.
    expect(writesOf(read('TASK_STATE_COMPLETED', { artifacts: [{ artifactId: 'a1', parts: [{ text: 'done' }] }] }))[0]).toMatchObject({ kind: 'snapshot' });
    // Still running: the cycle counts as one that ended on an answer we cannot accept (bounded by the progress rule).
    expect(read('TASK_STATE_WORKING').next).toMatchObject({ kind: 'progress', unacceptable: { code: 'LIMIT_EXCEEDED' } });
  });

  it('a GetTask answer over a limit ends the attempt at once (the issue\'s 90 s SUBMITTED case)', () => {
    const step = transition(recordIn('SUBMITTED'), { ...SAMPLES['read-failed'], code: 'LIMIT_EXCEEDED', retryable: false, unacceptable: limit }, policy);
    expect(step.next).toMatchObject({ kind: 'needs-person', code: 'LIMIT_EXCEEDED' });
  });

  it('A35: a ListTasks summary of a finished task is read in full before anything is journaled', () => {
    const summary = task('TASK_STATE_COMPLETED', { artifacts: [] });
    const step = transition(recordIn('INTENT'), { kind: 'search-result', purpose: 'reconcile', deduplicates: false, finding: { kind: 'found', task: summary, complete: false, ownership: { kind: 'proven', by: 'message-id' } } }, policy);
    expect(step).toEqual({ next: { kind: 'read-once', why: 'adopting a task found by our messageId', taskId: 'T1' } });
    const full = transition(recordIn('INTENT'), { kind: 'task-read', task: summary, call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'adopt', cycle: false }, policy);
    expect(writesOf(full)).toEqual([{ kind: 'snapshot', task: summary, guard: 'version', bindAgent: true }]);
  });

  it('"found again" before LOST is journaled and routed (never left without a next)', () => {
    const again = task('TASK_STATE_WORKING');
    const step = transition(recordIn('WORKING'), { kind: 'search-result', purpose: 'lost-check', deduplicates: false, finding: { kind: 'found', task: again, complete: true, ownership: { kind: 'proven', by: 'message-id' } } }, policy);
    expect(step).toEqual({ write: { kind: 'snapshot', task: again, guard: 'none' }, next: { kind: 'route' } });
  });

  it('A35 (held send): a ListTasks summary of a finished task found while the send was held is read in full before anything is journaled', () => {
    const finished = task('TASK_STATE_COMPLETED');
    const held = { kind: 'send-answered', answer: { task: finished }, ownership: { kind: 'proven', by: 'message-id' }, via: 'search-while-held' } as const;
    expect(transition(recordIn('INTENT'), { ...held, summary: true }, policy)).toEqual({
      next: { kind: 'read-once', why: 'a summary of a finished task found by our messageId while the send was held', taskId: finished.id },
    });
    // A full read, or a summary of a task still working, is journaled at once.
    expect(writesOf(transition(recordIn('INTENT'), { ...held, summary: false }, policy))[0]).toMatchObject({ kind: 'snapshot', task: finished });
    expect(writesOf(transition(recordIn('INTENT'), { ...held, answer: { task: task('TASK_STATE_WORKING') }, summary: true }, policy))[0]).toMatchObject({ kind: 'snapshot' });
  });

  it('a foreign send answer is journaled as received (never "not sent") and left to the reconciler', () => {
    const step = transition(recordIn('INTENT'), { ...SAMPLES['send-answered'], ownership: { kind: 'disproven', reason: 'foreign-context' } }, policy);
    expect(writesOf(step)[0]).toMatchObject({ kind: 'note-send-error', error: { code: 'FOREIGN_TASK', delivery: 'received' } });
    expect(step.next.kind).toBe('ask-reconciler');
  });

  it('an incoming stream event keeps the stream open; a finished row takes no more events', () => {
    expect(transition(recordIn('WORKING'), SAMPLES['stream-event'], policy).next.kind).toBe('continue');
    expect(transition(recordIn('COMPLETED'), SAMPLES['stream-event'], policy)).toEqual({ next: { kind: 'settle' } });
  });

  it('a stream of appended chunks that finishes: the chunk is journaled, the finished status waits for one full read whose artifacts replace the streamed ones', () => {
    const chunk = { artifactUpdate: { taskId: 'T1', contextId: 'C1', artifact: { artifactId: 'a1', parts: [{ text: 'lo' }] }, append: true, lastChunk: true } };
    const completed = { statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED' as const } } };
    const step = transition(recordIn('WORKING'), { kind: 'stream-event', responses: [chunk, completed], partialArtifacts: 'appended' }, policy);
    expect(writesOf(step)).toEqual([{ kind: 'events', responses: [chunk] }]);
    expect(step.next).toMatchObject({ kind: 'read-once', heldBack: { responses: [completed], partialArtifacts: 'appended' } });
    const heldBack = { responses: [completed] as [typeof completed], partialArtifacts: 'appended' as const };
    const whole = task('TASK_STATE_COMPLETED', { artifacts: [{ artifactId: 'a1', parts: [{ text: 'hello' }] }] });
    const read = transition(recordIn('WORKING'), { kind: 'task-read', task: whole, call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'x', cycle: true, heldBack }, policy);
    expect(read).toEqual({ write: { kind: 'snapshot', task: whole, guard: 'fence' }, next: { kind: 'route' } });
    // GetTask without artifacts: the streamed ones are kept (a snapshot without artifacts replaces none), with a warning.
    const bare = transition(recordIn('WORKING'), { kind: 'task-read', task: task('TASK_STATE_COMPLETED'), call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'x', cycle: true, heldBack }, policy);
    expect(writesOf(bare)).toEqual([{ kind: 'snapshot', task: task('TASK_STATE_COMPLETED'), guard: 'fence' }]);
    expect(bare.warning).toMatch(/no artifacts/);
    // The full read failed: the held-back status is journaled as streamed, with a warning (the result is not lost).
    const failed = transition(recordIn('WORKING'), { kind: 'read-failed', call: 'get-task', code: 'NETWORK_ERROR', retryable: true, why: 'x', cycle: true, heldBack }, policy);
    expect(failed).toMatchObject({ write: { kind: 'events', responses: [completed] }, next: { kind: 'route' }, warning: expect.stringMatching(/as streamed/) });
    // GetTask unusable: ListTasks with artifacts reads it instead.
    const unusable = transition(recordIn('WORKING'), { kind: 'read-failed', call: 'get-task', code: 'UNKNOWN_WIRE_VALUE', retryable: false, unacceptable: { code: 'UNKNOWN_WIRE_VALUE', message: 'x' }, why: 'x', cycle: true, heldBack }, policy);
    expect(unusable.next).toMatchObject({ kind: 'search', purpose: 'read', heldBack });
    const listed = transition(recordIn('WORKING'), { kind: 'search-result', purpose: 'read', deduplicates: false, finding: { kind: 'found', task: whole, complete: true, ownership: { kind: 'proven', by: 'message-id' } }, heldBack }, policy);
    expect(writesOf(listed)).toEqual([{ kind: 'snapshot', task: whole, guard: 'fence' }]);
    // A plain stream (no appended chunk) journals its finished status at once.
    expect(transition(recordIn('WORKING'), { kind: 'stream-event', responses: [chunk, completed] }, policy)).toEqual({ write: { kind: 'events', responses: [chunk, completed] }, next: { kind: 'continue' } });
  });

  it('attack13: a subscription without its first snapshot that finishes: the status waits for one full read, named for its cause', () => {
    const completed = { statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_COMPLETED' as const } } };
    const step = transition(recordIn('WORKING'), { kind: 'stream-event', responses: [completed], partialArtifacts: 'no-snapshot' }, policy);
    expect(writesOf(step)).toEqual([]);
    expect(step.next).toMatchObject({ kind: 'read-once', why: expect.stringMatching(/without its first snapshot/), heldBack: { responses: [completed], partialArtifacts: 'no-snapshot' } });
    const failed = transition(recordIn('WORKING'), { kind: 'read-failed', call: 'get-task', code: 'NETWORK_ERROR', retryable: true, why: 'x', cycle: true, heldBack: { responses: [completed], partialArtifacts: 'no-snapshot' } }, policy);
    expect(failed).toMatchObject({ write: { kind: 'events', responses: [completed] }, warning: expect.stringMatching(/without its first snapshot finished/) });
  });

  it('subscribe refused (-32001, -32004: maybe terminal) is one GetTask, not the not-found window', () => {
    expect(transition(recordIn('WORKING'), { kind: 'stream-failed', code: 'TASK_NOT_FOUND', retryable: false, unacceptable: { code: 'TASK_NOT_FOUND', message: 'not found' } }, policy).next.kind).toBe('read-once');
  });
});

describe('properties per kind', () => {
  const states = fc.constantFrom(...JOURNAL_STATES.filter((state) => !FINISHED.has(state)));
  const calls = fc.constantFrom<AgentCall>('get-task', 'subscribe', 'cancel', 'reply', 'push', 'list-tasks');

  it('TaskNotFound from any call is one row: a note, then ask later or search before LOST; never an outcome at once', () => {
    fc.assert(
      fc.property(states, calls, fc.nat(10), fc.option(fc.integer({ min: 0, max: 120_000 }), { nil: undefined }), (state, call, count, sinceAgo) => {
        const record = recordIn(state, { notFoundCount: count, ...(sinceAgo !== undefined ? { firstNotFoundAt: NOW - sinceAgo } : {}) });
        const step = transition(record, { kind: 'task-not-found', call }, policy);
        expect(writesOf(step)).toEqual([{ kind: 'note-not-found' }]);
        expect(['check-later', 'search']).toContain(step.next.kind);
        const other = transition(record, { kind: 'task-not-found', call: 'get-task' }, policy);
        expect(step).toEqual(other);
      }),
    );
  });

  it('an answer that arrived (delivery received) with a possible effect is never FAILED, resent or re-delegated blind', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), fc.option(fc.constantFrom('bodyBytes', 'jsonDepth', 'parts'), { nil: undefined }), (permanent, lastAttempt, overLimit) => {
        const error = { code: overLimit ? ('LIMIT_EXCEEDED' as const) : ('INTERNAL_ERROR' as const), message: 'x', delivery: 'received' as const, ...(overLimit ? { limit: overLimit } : {}) };
        const observation: Observation = { kind: 'send-failed', afterMark: true, delivery: 'received', effect: 'maybe', error, permanent, lastAttempt, ...(overLimit ? { unacceptable: { code: 'LIMIT_EXCEEDED' as const, message: 'x', limit: overLimit } } : {}) };
        const step = transition(recordIn('INTENT'), observation, policy);
        expect(outcomeStates(step)).not.toContain('FAILED');
        expect(['resend', 'retry']).not.toContain(step.next.kind);
        expect(['needs-person', 'ask-reconciler']).toContain(step.next.kind);
      }),
    );
  });

  it('a read that is not complete never journals a finished state', () => {
    const terminal = fc.constantFrom<TaskState>('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED');
    fc.assert(
      fc.property(states, terminal, calls, fc.boolean(), (state, taskState, call, cycle) => {
        const step = transition(recordIn(state), { kind: 'task-read', task: task(taskState), call, complete: false, ownership: { kind: 'proven', by: 'message-id' }, why: 'x', cycle }, policy);
        expect(writesOf(step).filter((write) => write.kind === 'snapshot')).toEqual([]);
        // (A read of the task a refused push named is never applied: nothing, unless it shows our message elsewhere.)
        expect(step.next.kind).toBe(call === 'push' ? 'nothing' : 'read-once');
        const search = transition(recordIn('INTENT'), { kind: 'search-result', purpose: 'reconcile', deduplicates: false, finding: { kind: 'found', task: task(taskState), complete: false, ownership: { kind: 'proven', by: 'message-id' } } }, policy);
        expect(writesOf(search)).toEqual([]);
      }),
    );
  });

  it('a stream whose artifacts are a partial view never journals a finished status from the stream alone; the full read decides, and the status is never lost', () => {
    const terminal = fc.constantFrom<TaskState>('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED');
    const anyState = fc.constantFrom<TaskState>('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_INPUT_REQUIRED');
    const reads = fc.oneof(
      // foreign: another task (T9) answered in ours' place, without our message or holding it (the agent has it twice).
      fc.record({ kind: fc.constant('task-read' as const), state: anyState, artifacts: fc.boolean(), foreign: fc.constantFrom(false as const, 'other' as const, 'holder' as const) }),
      fc.record({ kind: fc.constant('read-failed' as const), retryable: fc.boolean(), overLimit: fc.boolean() }),
      fc.record({ kind: fc.constant('task-not-found' as const) }),
      fc.record({ kind: fc.constant('search-result' as const), found: fc.boolean(), complete: fc.boolean() }),
    );
    fc.assert(
      fc.property(states.filter((state) => state !== 'INTENT'), terminal, fc.boolean(), fc.constantFrom('appended' as const, 'resubscribed' as const), reads, (state, taskState, paired, partialArtifacts, read) => {
        const chunk = { artifactUpdate: { taskId: 'T1', contextId: 'C1', artifact: { artifactId: 'a1', parts: [{ text: 'x' }] }, append: true } };
        const status = { statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: taskState } } };
        const streamed = transition(recordIn(state), { kind: 'stream-event', responses: paired ? [chunk, status] : [status], partialArtifacts }, policy);
        // Nothing but the artifact update is journaled from the stream; one full read holds the status.
        expect(writesOf(streamed)).toEqual(paired ? [{ kind: 'events', responses: [chunk] }] : []);
        expect(streamed.next).toEqual({ kind: 'read-once', why: expect.any(String), heldBack: { responses: [status], partialArtifacts } });
        const heldBack = { responses: [status] as [typeof status], partialArtifacts };
        const full = (state: TaskState, artifacts: boolean, id = 'T1', holds = true) =>
          task(state, { id, ...(holds ? {} : { history: [{ messageId: 'M-other', role: 'ROLE_USER', parts: [{ text: 'other' }] }] }), ...(artifacts ? { artifacts: [{ artifactId: 'a1', parts: [{ text: 'whole' }] }] } : {}) });
        const observation: Observation =
          read.kind === 'task-read'
            ? { kind: 'task-read', task: full(read.state, read.artifacts, read.foreign ? 'T9' : 'T1', read.foreign !== 'other'), call: 'get-task', complete: true, ownership: read.foreign ? { kind: 'disproven', reason: 'x' } : { kind: 'proven', by: 'task-id' }, why: 'x', cycle: true, heldBack }
            : read.kind === 'read-failed'
              ? { kind: 'read-failed', call: 'get-task', code: 'NETWORK_ERROR', retryable: read.retryable, why: 'x', cycle: true, heldBack, ...(read.overLimit ? { unacceptable: limit } : {}) }
              : read.kind === 'task-not-found'
                ? { kind: 'task-not-found', call: 'get-task', heldBack }
                : { kind: 'search-result', purpose: 'read', deduplicates: false, finding: read.found ? { kind: 'found', task: full('TASK_STATE_COMPLETED', true), complete: read.complete, ownership: { kind: 'proven', by: 'message-id' } } : { kind: 'unsupported' }, heldBack };
        const step = transition(recordIn(state), observation, policy);
        const writes = writesOf(step);
        if (read.kind === 'task-read' && read.foreign === 'holder') {
          // Another task holding our message: the agent has it twice; a person, both ids and the streamed status named.
          expect(writes).toEqual([]);
          expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS', anyRow: true, message: expect.stringMatching(/T1.*T9[\s\S]*the stream said task T1/) });
          return;
        }
        if (step.next.kind === 'search') {
          // GetTask unusable: ListTasks reads it, the status still held.
          expect(writes).toEqual([]);
          expect(step.next.heldBack).toEqual(heldBack);
          return;
        }
        expect(step.next).toEqual({ kind: 'route' });
        expect(writes).toHaveLength(1);
        const [write] = writes;
        if (write!.kind === 'snapshot') {
          // Only a finished task of ours read in full; its artifacts replace the streamed ones, none keeps them (warned).
          expect(write!.task.id).toBe('T1');
          expect(isTerminalTaskState(write!.task.status.state)).toBe(true);
          if (!write!.task.artifacts?.length) expect(step.warning).toBeDefined();
        } else {
          // Anything else: the held-back status as streamed, with a warning.
          expect(write).toEqual({ kind: 'events', responses: [status] });
          expect(step.warning).toBeDefined();
        }
      }),
    );
  });

  it('an answer over a limit ends in a person with LIMIT_EXCEEDED; a stream event over one in at most one read more', () => {
    fc.assert(
      fc.property(states, fc.constantFrom('bodyBytes', 'sseEventBytes', 'jsonDepth', 'parts'), fc.boolean(), (state, limitName, cycle) => {
        const unacceptable = { code: 'LIMIT_EXCEEDED' as const, message: 'over', limit: limitName };
        const read = transition(recordIn(state), { kind: 'read-failed', call: 'get-task', code: 'LIMIT_EXCEEDED', retryable: false, unacceptable, why: 'x', cycle }, policy);
        expect(read.next).toMatchObject({ kind: 'needs-person', code: 'LIMIT_EXCEEDED', limit: limitName });
        const stream = transition(recordIn(state), { kind: 'stream-failed', code: 'LIMIT_EXCEEDED', retryable: false, unacceptable }, policy);
        expect(stream.next).toMatchObject({ kind: 'read-once', refused: unacceptable });
        // The refusal is journaled on the row (A32, attack 30): a durable fact of the attempt, not only of that read;
        // the same fact whichever path refused the answer (a stream event, a read, a SendMessage answer).
        const noted = [{ kind: 'note-refused-result', refusal: { message: 'over', limit: limitName } }];
        expect(writesOf(stream)).toEqual(noted);
        expect(writesOf(read)).toEqual(noted);
        const send = transition(recordIn(state), { kind: 'send-failed', afterMark: true, delivery: 'received', effect: 'maybe', error: { code: 'LIMIT_EXCEEDED', message: 'over', delivery: 'received' }, permanent: true, lastAttempt: false, unacceptable }, policy);
        expect(send.next).toMatchObject({ kind: 'needs-person', code: 'LIMIT_EXCEEDED' });
        expect(writesOf(send)).toEqual(noted);
      }),
    );
  });

  it('an answer we cannot accept is always counted or read another way, in a cycle or not, bound or not (fuzz 271828)', () => {
    const codes = fc.constantFrom('RESPONSE_ID_MISMATCH', 'UNKNOWN_WIRE_VALUE', 'INVALID_AGENT_RESPONSE', 'NO_TASK_ID', 'PROTOCOL_ERROR', 'UNEXPECTED_ERROR');
    fc.assert(
      fc.property(states, calls, codes, fc.boolean(), fc.boolean(), (state, call, code, cycle, bound) => {
        const record = bound ? recordIn(state) : recordIn('INTENT');
        const step = transition(record, { kind: 'read-failed', call, code, retryable: false, unacceptable: { code, message: 'x' }, why: 'x', cycle }, policy);
        // Never a silent re-check: a check-later would ask the same question again and again, uncounted.
        expect(step.next.kind).not.toBe('check-later');
        if (step.next.kind === 'progress') expect(step.next.unacceptable).toBeDefined();
        else expect(step.next).toMatchObject({ kind: 'search', purpose: 'read' });
        expect(writesOf(step).filter((write) => write.kind === 'snapshot' || write.kind === 'outcome')).toEqual([]);
      }),
    );
  });

  it('the full read of a task found by our messageId failing with a retryable error is a counted round, never an uncounted re-check (fuzz 31337 run 246)', () => {
    const retryableCodes = fc.constantFrom('INTERNAL_ERROR', 'UPSTREAM_ERROR', 'NETWORK_ERROR', 'STREAM_IDLE');
    fc.assert(
      fc.property(calls, retryableCodes, fc.boolean(), (call, code, cycle) => {
        const step = transition(recordIn('INTENT'), { kind: 'read-failed', call, code, retryable: true, why: 'adopting a task found by our messageId', cycle }, policy);
        expect(step.next.kind).toBe('progress');
        if (step.next.kind === 'progress') expect(step.next.unacceptable).toEqual({ code });
        expect(writesOf(step)).toEqual([]);
      }),
    );
    // A bound row's re-read outside a cycle that drops is still looked at again at its next check (the progress rule covers cycles).
    expect(transition(recordIn('INPUT_REQUIRED'), { kind: 'read-failed', call: 'get-task', code: 'NETWORK_ERROR', retryable: true, why: 'x', cycle: false }, policy).next.kind).toBe('check-later');
  });

  it('a task found by our messageId whose GetTask was unusable is adopted from ListTasks with artifacts, only when proven ours', () => {
    fc.assert(
      fc.property(fc.constantFrom<TaskState>('TASK_STATE_COMPLETED', 'TASK_STATE_WORKING', 'TASK_STATE_FAILED'), fc.boolean(), (taskState, proven) => {
        const ownership = proven ? ({ kind: 'proven', by: 'message-id' } as const) : ({ kind: 'unknown' } as const);
        const step = transition(recordIn('INTENT'), { kind: 'search-result', purpose: 'read', deduplicates: false, finding: { kind: 'found', task: task(taskState), complete: true, ownership } }, policy);
        const snapshots = writesOf(step).filter((write) => write.kind === 'snapshot');
        if (proven) expect(snapshots).toEqual([expect.objectContaining({ kind: 'snapshot', bindAgent: true, guard: 'version' })]);
        else {
          expect(snapshots).toEqual([]);
          expect(step.next).toMatchObject({ kind: 'progress', unacceptable: { code: 'PROTOCOL_ERROR' } });
        }
      }),
    );
  });

  it('P36: a stream that delivered events makes the read after it a live cycle (the backoff starts again); one that delivered none does not', () => {
    fc.assert(
      fc.property(states.filter((state) => state !== 'INPUT_REQUIRED' && state !== 'AUTH_REQUIRED'), fc.nat(5), fc.boolean(), (state, delivered, failed) => {
        const ended: Observation = failed ? { kind: 'stream-failed', code: 'NETWORK_ERROR', retryable: true, delivered } : { kind: 'stream-ended', how: 'closed', delivered };
        const step = transition(recordIn(state), ended, policy);
        expect(step.next).toMatchObject({ kind: 'read-once' });
        expect(step.next.kind === 'read-once' && step.next.afterLiveStream === true).toBe(delivered > 0);
        const read = transition(recordIn(state), { kind: 'task-read', task: task('TASK_STATE_WORKING'), call: 'get-task', complete: true, ownership: { kind: 'proven', by: 'task-id' }, why: 'x', cycle: true, ...(delivered > 0 ? { afterLiveStream: true } : {}) }, policy);
        expect(read.next).toMatchObject({ kind: 'progress' });
        expect(read.next.kind === 'progress' && read.next.live === true).toBe(delivered > 0);
      }),
    );
  });

  it('P36: a live cycle (count 0, the run kept) still ends at the no-progress window, and never slow-polls before it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_000_000 }), (elapsedMs) => {
        const next = progressNext({ count: 0, since: NOW - elapsedMs, unacceptableInRow: 0 }, { what: 'x' }, { taskId: 'T1', state: 'WORKING' }, policy);
        expect(next.kind).toBe(elapsedMs >= policy.noProgressWindowMs ? 'needs-person' : 'follow');
      }),
    );
  });

  it('P36 follow rate: a live cycle that showed nothing new for slowPollAfterMs resubscribes within the cap window, never at once; before that, at once', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: policy.noProgressWindowMs - 1 }), fc.double({ min: 0, max: 0.999, noNaN: true }), (elapsedMs, draw) => {
        const next = progressNext({ count: 0, since: NOW - elapsedMs, unacceptableInRow: 0 }, { what: 'x' }, { taskId: 'T1', state: 'WORKING' }, { ...policy, random: () => draw });
        expect(next.kind).toBe('follow');
        const delayMs = next.kind === 'follow' ? (next.plan.delayMs ?? 0) : -1;
        const window = elapsedMs >= policy.slowPollAfterMs ? policy.followBackoff.capMs : policy.followBackoff.baseMs;
        expect(delayMs).toBe(Math.floor(draw * window));
      }),
    );
  });

  it('P32: a failed search proves no absence: never LOST, never a resend; a drop or 5xx is a counted round, a refusal a person at once', () => {
    fc.assert(
      fc.property(fc.constantFrom('reconcile', 'lost-check') , fc.boolean(), fc.constantFrom('UPSTREAM_ERROR', 'NETWORK_ERROR', 'INTERNAL_ERROR'), (purpose, retryable, code) => {
        const record = purpose === 'reconcile' ? recordIn('INTENT') : recordIn('WORKING');
        const step = transition(record, { kind: 'search-result', purpose, deduplicates: false, finding: { kind: 'failed', error: { code, message: 'boom' }, retryable } }, policy);
        expect(writesOf(step)).toEqual([]);
        if (retryable) expect(step.next).toMatchObject({ kind: 'progress', unacceptable: { code, outcome: 'SEARCH_UNAVAILABLE' } });
        else expect(step.next).toMatchObject({ kind: 'needs-person', code: 'SEARCH_UNAVAILABLE' });
        const ended = progressNext({ count: 2, since: NOW - 1_000, unacceptableInRow: policy.unacceptableAnswerLimit }, { what: 'x', unacceptable: { code, outcome: 'SEARCH_UNAVAILABLE' } }, record, policy);
        expect(ended).toMatchObject({ kind: 'needs-person', code: 'SEARCH_UNAVAILABLE' });
      }),
    );
  });

  it('P34: credentials refused on SendMessage are never FAILED nor another agent: the same messageId is resent with backoff, then AUTH', () => {
    fc.assert(
      fc.property(fc.nat(8), fc.boolean(), (resendCount, lastAttempt) => {
        const record = recordIn('INTENT', { resendCount });
        const error = { code: 'AUTHENTICATION_ERROR' as const, message: 'HTTP 401', retryable: false, delivery: 'received' as const, answer: 'error' as const };
        const step = transition(record, { kind: 'send-failed', afterMark: true, delivery: 'received', effect: 'none', error, permanent: false, lastAttempt, credentialsRefused: true }, policy);
        expect(writesOf(step).filter((write) => write.kind === 'outcome')).toEqual([]);
        if (resendCount + 1 >= policy.sendAttempts) expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AUTH' });
        else {
          expect(step.next).toMatchObject({ kind: 'resend', contextRefused: false });
          expect(writesOf(step)).toEqual([{ kind: 'release-for-resend', contextRefused: false }]);
        }
      }),
    );
  });

  it('P37: -32009 with a next interface on the card resends the same messageId there (within sendAttempts); without one it ends FAILED', () => {
    const next = { url: 'http://127.0.0.1:2/a2a', protocolBinding: 'JSONRPC', protocolVersion: '0.3' } as const;
    fc.assert(
      fc.property(fc.nat(8), fc.boolean(), (resendCount, hasNext) => {
        const error = { code: 'VERSION_NOT_SUPPORTED' as const, message: '-32009', retryable: false, delivery: 'received' as const, answer: 'error' as const };
        const step = transition(recordIn('INTENT', { resendCount }), { kind: 'send-failed', afterMark: true, delivery: 'received', effect: 'none', error, permanent: true, lastAttempt: false, ...(hasNext ? { nextInterface: next } : {}) }, policy);
        if (hasNext && resendCount + 1 < policy.sendAttempts) {
          expect(step.next).toMatchObject({ kind: 'resend' });
          expect(writesOf(step)).toEqual([{ kind: 'release-for-resend', contextRefused: false, agentInterface: next }]);
        } else expect(writesOf(step)).toEqual([expect.objectContaining({ kind: 'outcome', state: 'FAILED' })]);
      }),
    );
  });

  it('the progress rule ends a run of unacceptable answers in bounded cycles and never before the window otherwise', () => {
    fc.assert(
      fc.property(fc.nat(40), fc.integer({ min: 0, max: 2_000_000 }), fc.nat(6), fc.boolean(), (count, elapsedMs, unacceptableInRow, unacceptable) => {
        const next = progressNext({ count, since: NOW - elapsedMs, unacceptableInRow: unacceptable ? Math.max(1, unacceptableInRow) : 0 }, { what: 'x', ...(unacceptable ? { unacceptable: { code: 'UNKNOWN_WIRE_VALUE' } } : {}) }, { taskId: 'T1', state: 'WORKING' }, policy);
        const inRow = unacceptable ? Math.max(1, unacceptableInRow) : 0;
        if (unacceptable && inRow >= policy.unacceptableAnswerLimit) expect(next).toMatchObject({ kind: 'needs-person', code: 'PROTOCOL_ERROR' });
        else if (elapsedMs >= policy.noProgressWindowMs) expect(next.kind).toBe('needs-person');
        else expect(['follow', 'slow-poll']).toContain(next.kind);
      }),
    );
  });

  it('routing from a row alone: finished settles, a wanted cancel cancels, an open question parks, else follow', () => {
    fc.assert(
      fc.property(fc.constantFrom(...JOURNAL_STATES), fc.boolean(), (state, cancelWanted) => {
        const next = routeOf(recordIn(state), {}, cancelWanted);
        if (FINISHED.has(state)) expect(next.kind).toBe('settle');
        else if (cancelWanted) expect(next.kind).toBe('cancel');
        else if (state === 'INPUT_REQUIRED' || state === 'AUTH_REQUIRED') expect(next.kind).toBe('park');
        else expect(next.kind).toBe('follow');
      }),
    );
  });
});

describe('N31: waiting for an agent that cannot be reached (nothing was created)', () => {
  const refused = { code: 'NETWORK_ERROR' as const, message: 'ECONNREFUSED on http://127.0.0.1:7203/', retryable: true, delivery: 'not-sent' as const };
  const notSent = (afterMark: boolean, unreachable: { deadlineAt: number; unreachableForMs?: number }): Observation => ({
    kind: 'send-failed', afterMark, delivery: 'none', effect: 'none', error: refused, permanent: false, lastAttempt: false, unreachable,
  });
  const waiting = (extra: Partial<DelegationRecord> = {}) => recordIn('INTENT', { sendStartedAt: undefined, ...extra });

  it('a refused card fetch (before the mark) waits: the error and the next try journaled, the next try a delayed send', () => {
    const step = transition(waiting(), notSent(false, { deadlineAt: NOW + 86_400_000 }), policy);
    expect(step.write).toEqual({ kind: 'note-unreachable', error: refused, nextTryAt: NOW + 500, marked: false });
    expect(step.next).toEqual({ kind: 'send-later', atMs: NOW + 500 });
  });

  it('a SendMessage that never left (after the mark) waits too and clears its mark; the next try never passes the bound', () => {
    const step = transition(waiting({ unreachableCount: 9, unreachableSince: NOW - 10_000 }), notSent(true, { deadlineAt: NOW + 86_400_000, unreachableForMs: 12_000 }), policy);
    expect(step.write).toMatchObject({ kind: 'note-unreachable', marked: true, nextTryAt: NOW + 2_000 });
    expect(step.next).toEqual({ kind: 'send-later', atMs: NOW + 2_000 });
  });

  it('unreachableForMs elapsed: FAILED AGENT_UNREACHABLE, re-delegable (nothing was sent)', () => {
    const step = transition(waiting({ unreachableCount: 5, unreachableSince: NOW - 8_000 }), notSent(false, { deadlineAt: NOW + 86_400_000, unreachableForMs: 8_000 }), policy);
    expect(step.write).toMatchObject({ kind: 'outcome', state: 'FAILED', error: { code: 'AGENT_UNREACHABLE', retryable: true, delivery: 'not-sent' } });
    expect(step.next).toEqual({ kind: 'route' });
  });

  it('the attempt deadline on a task the agent took: never FAILED (re-delegable), a person decides; AUTH when it still asks for credentials (fuzz 31337)', () => {
    const bound = fc.constantFrom<JournalState>('SUBMITTED', 'WORKING', 'INPUT_REQUIRED', 'AUTH_REQUIRED');
    fc.assert(
      fc.property(bound, (state) => {
        const step = transition(recordIn(state, { taskId: 'T1' }), { kind: 'deadline-passed', deadlineAt: NOW - 1 }, policy);
        expect(writesOf(step).filter((write) => write.kind === 'outcome')).toEqual([]);
        expect(step.next).toMatchObject({ kind: 'needs-person', code: state === 'AUTH_REQUIRED' ? 'AUTH' : 'DEADLINE_EXCEEDED', delivery: 'received' });
      }),
    );
    // No task of ours at the agent (never sent, or sent and proven absent: unmarked): nothing can have happened, the step moves on.
    expect(transition(recordIn('INTENT', { sendStartedAt: undefined }), { kind: 'deadline-passed', deadlineAt: NOW - 1 }, policy).write).toMatchObject({ kind: 'outcome', state: 'FAILED', error: { code: 'DEADLINE_EXCEEDED' } });
    // attack36: marked (a SendMessage may have left): never FAILED blind, the reconciler's search decides.
    expect(transition(recordIn('INTENT'), { kind: 'deadline-passed', deadlineAt: NOW - 1 }, policy)).toEqual({ next: { kind: 'ask-reconciler' } });
  });

  it('the attempt deadline while waiting: FAILED AGENT_UNREACHABLE (not DEADLINE_EXCEEDED); a row never tried keeps DEADLINE_EXCEEDED', () => {
    const step = transition(waiting({ unreachableCount: 3, unreachableSince: NOW - 60_000, error: refused }), { kind: 'deadline-passed', deadlineAt: NOW - 1 }, policy);
    expect(step.write).toMatchObject({ kind: 'outcome', state: 'FAILED', error: { code: 'AGENT_UNREACHABLE', delivery: 'not-sent' } });
    expect(transition(waiting(), { kind: 'deadline-passed', deadlineAt: NOW - 1 }, policy).write).toMatchObject({ error: { code: 'DEADLINE_EXCEEDED' } });
  });

  it('deadline35 property: the attempt deadline on an unbound row keeping evidence (suspects pending or lost, a refused result) is a person, never FAILED; without it FAILED only over the row as read', () => {
    fc.assert(
      fc.property(fc.nat(5), fc.option(fc.constantFrom('["T2"]', '["T2","T3"]'), { nil: undefined }), fc.nat(3), fc.boolean(), (tries, suspects, lost, refusedResult) => {
        const record = waiting({ unreachableCount: tries, ...(suspects !== undefined ? { suspects } : {}), suspectsLost: lost, ...(refusedResult ? { refusedResult: { code: 'LIMIT_EXCEEDED', message: 'an artifact over artifactBytesPerDelegation', retryable: false } } : {}) });
        const step = transition(record, { kind: 'deadline-passed', deadlineAt: NOW - 1 }, policy);
        if (suspects !== undefined || lost > 0 || refusedResult) {
          expect(outcomeStates(step)).toEqual([]);
          expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS' });
          if (suspects !== undefined) expect((step.next as { message: string }).message).toContain('T2');
        } else {
          expect(step.write).toMatchObject({ kind: 'outcome', state: 'FAILED', guard: 'version', unsent: 'as-read' });
        }
      }),
    );
  });

  it('property: any not-sent error at any try count waits within [0, cap] and never FAILED before its bound; FAILED AGENT_UNREACHABLE at it', () => {
    const bound = fc.record({ deadlineIn: fc.integer({ min: -5_000, max: 200_000 }), unreachableForMs: fc.option(fc.integer({ min: 1, max: 200_000 }), { nil: undefined }) });
    fc.assert(
      fc.property(fc.nat(200), fc.option(fc.integer({ min: 0, max: 300_000 }), { nil: undefined }), fc.boolean(), bound, fc.double({ min: 0, max: 0.999_999, noNaN: true }), (count, sinceAgo, afterMark, { deadlineIn, unreachableForMs }, random) => {
        const record = waiting({ unreachableCount: count, ...(sinceAgo !== undefined ? { unreachableSince: NOW - sinceAgo } : {}) });
        const bounds = { deadlineAt: NOW + deadlineIn, ...(unreachableForMs !== undefined ? { unreachableForMs } : {}) };
        const step = transition(record, notSent(afterMark, bounds), { ...policy, random: () => random });
        const giveUpAt = Math.min(bounds.deadlineAt, unreachableForMs === undefined ? Infinity : NOW - (sinceAgo ?? 0) + unreachableForMs);
        if (NOW < giveUpAt) {
          expect(outcomeStates(step)).toEqual([]);
          expect(step.next.kind).toBe('send-later');
          const { nextTryAt } = step.write as Extract<Write, { kind: 'note-unreachable' }>;
          expect(nextTryAt - NOW).toBeGreaterThanOrEqual(0);
          expect(nextTryAt - NOW).toBeLessThanOrEqual(policy.unreachableBackoff.capMs);
          expect(nextTryAt).toBeLessThanOrEqual(giveUpAt);
          expect(step.next).toEqual({ kind: 'send-later', atMs: nextTryAt });
        } else {
          expect(step.write).toMatchObject({ kind: 'outcome', state: 'FAILED', error: { code: 'AGENT_UNREACHABLE', retryable: true } });
        }
      }),
    );
  });

  it('property: a try that may have been delivered and may have created work is never waited on nor resent, whatever its bounds', () => {
    fc.assert(
      fc.property(fc.constantFrom('maybe' as const, 'received' as const), fc.constant('maybe' as const), fc.boolean(), fc.nat(50), (delivery, effect, lastAttempt, count) => {
        const observation: Observation = { ...notSent(true, { deadlineAt: NOW + 60_000 }), delivery, effect, lastAttempt, error: { ...refused, delivery } } as Observation;
        const step = transition(waiting({ unreachableCount: count }), observation, policy);
        expect(writesOf(step).map((write) => write.kind)).not.toContain('note-unreachable');
        expect(['send-later', 'retry', 'resend']).not.toContain(step.next.kind);
      }),
    );
  });
});

describe('question-expired: a question that passed its step\'s question.expiresAfterMs unanswered', () => {
  const parked = (extra: Partial<DelegationRecord> = {}) => recordIn('INPUT_REQUIRED', { questionKey: 'seq:1', questionAskedAt: NOW - 60_000, ...extra });
  const expired = (onExpiry: 'cancel' | 'fail' | 'answer'): Observation =>
    onExpiry === 'answer'
      ? { kind: 'question-expired', questionKey: 'seq:1', expiresAt: NOW - 1, onExpiry, reply: { messageId: 'R-expiry', text: 'no preference' } }
      : { kind: 'question-expired', questionKey: 'seq:1', expiresAt: NOW - 1, onExpiry };

  it('fail: journaled expired, then FAILED QUESTION_EXPIRED (re-delegable), guarded by the version the mark leaves', () => {
    const step = transition(parked(), expired('fail'), policy);
    expect(writesOf(step)).toMatchObject([
      { kind: 'expire-question', questionKey: 'seq:1', action: 'fail' },
      { kind: 'outcome', state: 'FAILED', guard: 'version', error: { code: 'QUESTION_EXPIRED', retryable: true } },
    ]);
    expect(step.next).toEqual({ kind: 'route' });
  });

  it('cancel: journaled expired, then the workflow is canceled', () => {
    const step = transition(parked(), expired('cancel'), policy);
    expect(writesOf(step)).toMatchObject([{ kind: 'expire-question', action: 'cancel' }]);
    expect(step.next.kind).toBe('cancel-workflow');
  });

  it('answer: the default answer journaled as the reply with the expiry, then routed (the park sends it)', () => {
    const step = transition(parked(), expired('answer'), policy);
    expect(writesOf(step)).toEqual([{ kind: 'expire-question', questionKey: 'seq:1', action: 'answer', reply: { messageId: 'R-expiry', text: 'no preference' } }]);
    expect(step.next).toEqual({ kind: 'route' });
  });

  it('a question answered first, another question, or a row no longer parked: nothing expires', () => {
    for (const onExpiry of ['cancel', 'fail', 'answer'] as const) {
      for (const record of [parked({ replyMessageId: 'R1', replyForQuestion: 'seq:1', replyState: 'pending' }), parked({ questionKey: 'seq:2' }), recordIn('WORKING', { questionKey: 'seq:1' })]) {
        const step = transition(record, expired(onExpiry), policy);
        expect(step).toEqual({ next: { kind: 'route' } });
      }
    }
  });

  it('a reply the agent refused reopens the question: it may expire', () => {
    const step = transition(parked({ replyMessageId: 'R1', replyState: 'refused' }), expired('fail'), policy);
    expect(writesOf(step).map((write) => write.kind)).toEqual(['expire-question', 'outcome']);
  });

  it('a question journaled expired before (the run stopped after the mark): what was journaled then is done, nothing expires twice', () => {
    const before = (questionExpiry: 'cancel' | 'fail' | 'answer') => parked({ questionExpired: 'seq:1', questionExpiredAt: NOW - 10, questionExpiry });
    expect(writesOf(transition(before('fail'), expired('cancel'), policy))).toMatchObject([{ kind: 'outcome', state: 'FAILED', error: { code: 'QUESTION_EXPIRED' } }]);
    expect(transition(before('cancel'), expired('fail'), policy)).toMatchObject({ next: { kind: 'cancel-workflow' } });
    expect(writesOf(transition(before('cancel'), expired('fail'), policy))).toEqual([]);
    expect(transition(before('answer'), expired('answer'), policy)).toEqual({ next: { kind: 'route' } });
  });

  it('property: whatever the row, a question-expired step writes at most one expiry, an outcome only FAILED QUESTION_EXPIRED, and never twice', () => {
    const rows = fc.record({
      state: fc.constantFrom(...JOURNAL_STATES),
      questionKey: fc.constantFrom('seq:1', 'seq:2', undefined),
      replyForQuestion: fc.constantFrom('seq:1', 'seq:2', undefined),
      replyState: fc.constantFrom('pending', 'sending', 'sent', 'refused', undefined),
      questionExpired: fc.constantFrom('seq:1', 'seq:2', undefined),
      questionExpiry: fc.constantFrom('cancel', 'fail', 'answer', undefined),
      onExpiry: fc.constantFrom('cancel', 'fail', 'answer'),
    });
    fc.assert(
      fc.property(rows, ({ state, onExpiry, ...fields }) => {
        const extra = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<DelegationRecord>;
        const record = recordIn(state, { ...extra, ...(extra.replyForQuestion ? { replyMessageId: 'R1' } : {}) });
        const step = transition(record, expired(onExpiry), policy);
        const writes = writesOf(step);
        expect(writes.filter((write) => write.kind === 'expire-question').length).toBeLessThanOrEqual(1);
        for (const write of writes) if (write.kind === 'outcome') expect(write).toMatchObject({ state: 'FAILED', error: { code: 'QUESTION_EXPIRED' } });
        // Answered (a reply journaled for this question, not refused): never expired, never failed, never canceled.
        const answered = record.replyForQuestion === record.questionKey && record.questionKey !== undefined && record.questionExpired !== record.questionKey;
        if (answered && !FINISHED.has(state)) {
          expect(writes).toEqual([]);
          expect(step.next.kind).toBe('route');
        }
        // Expired before: the expiry is not journaled again.
        if (record.questionExpired !== undefined && record.questionExpired === record.questionKey) expect(writes.map((write) => write.kind)).not.toContain('expire-question');
      }),
      { numRuns: 500 },
    );
  });
});

describe('a send that waits for its agent (flow control: fleet-wide slots, a share, a rate, a pause)', () => {
  const unmarked = recordIn('INTENT', { sendStartedAt: undefined });
  it('an unmarked INTENT journals the wait and tries again at its time (nothing sent)', () => {
    for (const reason of ['slots-full', 'share-full', 'rate', 'paused'] as const) {
      expect(transition(unmarked, { kind: 'send-deferred', untilMs: NOW + 1_500, reason }, policy)).toEqual({
        write: { kind: 'note-slot-wait', nextTryAt: NOW + 1_500 },
        next: { kind: 'send-later', atMs: NOW + 1_500 },
      });
    }
  });
  it('a marked row (it may have been sent) or a bound task is never told to wait: routed as it is', () => {
    expect(transition(recordIn('INTENT'), { kind: 'send-deferred', untilMs: NOW + 1_500, reason: 'slots-full' }, policy)).toEqual({ next: { kind: 'route' } });
    expect(transition(recordIn('WORKING'), { kind: 'send-deferred', untilMs: NOW + 1_500, reason: 'paused' }, policy)).toEqual({ next: { kind: 'route' } });
  });
});

/** A cancel-answered step: to a person (CANCEL_REFUSED, delivered, nothing written), else the task followed (its snapshot written). */
const expectCancelStep = (step: ReturnType<typeof transition>, toPerson: boolean) => {
  if (toPerson) {
    expect(step.next).toMatchObject({ kind: 'needs-person', code: 'CANCEL_REFUSED', delivery: 'received' });
    expect(step.write).toBeUndefined();
  } else {
    expect(step.next).toEqual({ kind: 'route', plan: { cancelIfRequested: false } });
    expect(step.write).toMatchObject({ kind: 'snapshot' });
  }
};

describe('a cancel the agent refuses (the workflow is stopping)', () => {
  const states: TaskState[] = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];
  it('property: a CancelTask refused, or answered round after round (unacceptableAnswerLimit), whose task waits for an answer goes to a person (CANCEL_REFUSED, delivered), never left parked; any other answer keeps the row followed', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<JournalState>('SUBMITTED', 'WORKING', 'INPUT_REQUIRED', 'AUTH_REQUIRED'),
        fc.constantFrom(...states),
        fc.option(fc.constantFrom('Task cannot be canceled', 'Unsupported operation', 'x'), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
        (state, taskState, refused, parkedRounds) => {
          const observation = { kind: 'cancel-answered' as const, task: task(taskState), ownership: { kind: 'proven' as const, by: 'task-id' as const }, ...(refused !== undefined ? { refused } : {}), ...(parkedRounds !== undefined ? { parkedRounds } : {}) };
          const step = transition(recordIn(state), observation, policy);
          const waits = taskState === 'TASK_STATE_INPUT_REQUIRED' || taskState === 'TASK_STATE_AUTH_REQUIRED';
          expectCancelStep(step, waits && (refused !== undefined || (parkedRounds ?? 0) >= policy.unacceptableAnswerLimit));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('a task that belongs to another delegation', () => {
  it('property: whatever unfinished row, a person decides at once (AMBIGUOUS, delivery received), nothing written, never a search or resend', () => {
    fc.assert(
      fc.property(fc.constantFrom<JournalState>(...JOURNAL_STATES.filter((state) => !FINISHED.has(state))), fc.string({ maxLength: 80 }), (state, reason) => {
        const step = transition(recordIn(state), { kind: 'task-bound-elsewhere', reason }, policy);
        expect(step.write).toBeUndefined();
        expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS', delivery: 'received' });
      }),
      { numRuns: 200 },
    );
  });
});

describe('a cancel refused while the agent has our answer', () => {
  it('property: a parked task whose current question our sent reply answered is followed (its result kept), whatever the refusal or the rounds; an unanswered one goes to a person', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<JournalState>('INPUT_REQUIRED', 'AUTH_REQUIRED'),
        fc.constantFrom('TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED') as fc.Arbitrary<TaskState>,
        fc.constantFrom(undefined, 'pending', 'sending', 'sent', 'refused'),
        fc.constantFrom('q1', 'q2', undefined),
        fc.option(fc.constant('Task cannot be canceled'), { nil: undefined }),
        fc.integer({ min: 1, max: 6 }),
        (state, taskState, replyState, replyForQuestion, refused, parkedRounds) => {
          const record = recordIn(state, { questionKey: 'q1', ...(replyState ? { replyState: replyState as DelegationRecord['replyState'], replyMessageId: 'r1' } : {}), ...(replyForQuestion ? { replyForQuestion } : {}) });
          const observation = { kind: 'cancel-answered' as const, task: task(taskState), ownership: { kind: 'proven' as const, by: 'task-id' as const }, parkedRounds, ...(refused !== undefined ? { refused } : {}) };
          const step = transition(record, observation, policy);
          const answered = replyState === 'sent' && replyForQuestion === 'q1';
          if (!answered && (refused !== undefined || parkedRounds >= policy.unacceptableAnswerLimit)) expect(step.next).toMatchObject({ kind: 'needs-person', code: 'CANCEL_REFUSED' });
          else expect(step.next).toEqual({ kind: 'route', plan: { cancelIfRequested: false } });
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('a cancel refused while our reply may be with the agent (sending)', () => {
  type Deadline = 'none' | 'passed' | 'now' | 'ahead';
  const deadlineOf = (deadline: Deadline) => (deadline === 'none' ? {} : { replySendUntil: deadline === 'passed' ? NOW - 1 : deadline === 'now' ? NOW : NOW + 5_000 });
  /** One run per (reply state, deadline, whether the task read holds the reply) so every branch is reached whatever the seed. */
  const branches = (['sent', 'sending', 'pending', 'refused'] as const).flatMap((replyState) =>
    (['none', 'passed', 'now', 'ahead'] as const).flatMap((deadline) => [false, true].map((inHistory) => ({ replyState, deadline, inHistory }))),
  );
  // Review14: no sender liveness: a fleet worker beats for as long as it runs, so a reply left 'sending' kept the row
  // followed for ever. Past the lease only the task read showing the reply keeps it followed.
  it.each(branches)('property: reply $replyState, deadline $deadline, reply in the task\'s history $inHistory: a parked task whose current question our reply answers is followed while the reply may be with the agent, else a refused or drawn-out cancel goes to a person', ({ replyState, deadline, inHistory }) => {
    fc.assert(
      fc.property(
        fc.constantFrom<JournalState>('INPUT_REQUIRED', 'AUTH_REQUIRED'),
        fc.constantFrom('TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED') as fc.Arbitrary<TaskState>,
        fc.constantFrom('q1', 'q2', undefined),
        fc.option(fc.constant('Task cannot be canceled'), { nil: undefined }),
        fc.integer({ min: 1, max: 6 }),
        (state, taskState, replyForQuestion, refused, parkedRounds) => {
          const record = recordIn(state, { questionKey: 'q1', replyState, replyMessageId: 'r1', ...deadlineOf(deadline), ...(replyForQuestion ? { replyForQuestion } : {}) });
          const read = task(taskState);
          const history = [{ messageId: 'other', role: 'ROLE_USER' as const, parts: [{ text: 'book' }] }, ...(inHistory ? [{ messageId: 'r1', role: 'ROLE_USER' as const, parts: [{ text: 'six' }] }] : [])];
          const observation = { kind: 'cancel-answered' as const, task: { ...read, history }, ownership: { kind: 'proven' as const, by: 'task-id' as const }, parkedRounds, ...(refused !== undefined ? { refused } : {}) };
          const step = transition(record, observation, policy);
          const inFlight = replyState === 'sending' && (deadline === 'now' || deadline === 'ahead' || inHistory);
          const withAgent = replyForQuestion === 'q1' && (replyState === 'sent' || inFlight);
          expectCancelStep(step, !withAgent && (refused !== undefined || parkedRounds >= policy.unacceptableAnswerLimit));
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('a CancelTask answer we could not read', () => {
  // One run per kind of answer (the agent's refusal, an answer we could not read), so both are reached whatever the seed.
  it.each([false, true])('property (unreadable: %s): a waiting task still goes to a person (CANCEL_REFUSED: not canceled), the reason saying what we know: refused, or an answer we could not read', (unreadable) => {
    fc.assert(
      fc.property(fc.constantFrom<JournalState>('INPUT_REQUIRED', 'AUTH_REQUIRED', 'WORKING'), fc.constantFrom('TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED') as fc.Arbitrary<TaskState>, fc.string({ minLength: 1, maxLength: 40 }), (state, taskState, text) => {
        const observation = { kind: 'cancel-answered' as const, task: task(taskState), ownership: { kind: 'proven' as const, by: 'task-id' as const }, refused: text, ...(unreadable ? { unreadable } : {}) };
        const step = transition(recordIn(state), observation, policy);
        expectCancelStep(step, true);
        const message = (step.next as { message: string }).message;
        expect(message.includes('with an answer we could not read')).toBe(unreadable);
        expect(message.includes(`refused CancelTask of task`)).toBe(!unreadable);
        expect(message).toContain(text);
      }),
      { numRuns: 60 },
    );
  });
});

describe('an answer that arrived and could not be processed (unprocessedAnswer)', () => {
  const ANSWERS: readonly ObservationKind[] = ['send-answered', 'stream-event', 'task-read', 'search-result', 'push-received', 'cancel-answered', 'reply-delivered'];
  const found = { kind: 'search-result', purpose: 'reconcile', deduplicates: false, finding: { kind: 'found', task: task('TASK_STATE_COMPLETED'), complete: true, ownership: { kind: 'proven', by: 'message-id' } } } as const;
  const reply = { kind: 'reply-delivered', replyMessageId: 'R1', task: task('TASK_STATE_WORKING'), ownership: { kind: 'proven', by: 'task-id' } } as const;
  const sampleOf = (kind: ObservationKind): Observation => (kind === 'search-result' ? found : kind === 'reply-delivered' ? reply : SAMPLES[kind]);
  const stack = { code: 'LIMIT_EXCEEDED' as const, message: 'the answer could not be processed (RangeError: Maximum call stack size exceeded)', limit: 'jsonDepth' };
  const fault = { code: 'PROTOCOL_ERROR' as const, message: 'the answer could not be processed (TypeError: x)' };

  it('property: every observation carrying an answer becomes its failure with delivery received; none resends, none searches again for what failed', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ANSWERS), fc.constantFrom<JournalState>('INTENT', 'SUBMITTED', 'WORKING', 'INPUT_REQUIRED'), fc.constantFrom(stack, fault), (kind, state, unacceptable) => {
        const substitute = unprocessedAnswer(sampleOf(kind), unacceptable);
        expect(substitute).toBeDefined();
        expect(unprocessedAnswer(substitute!, unacceptable)).toBeUndefined();
        if (substitute!.kind === 'send-failed') expect(substitute).toMatchObject({ afterMark: true, delivery: 'received', effect: 'maybe', error: { delivery: 'received', answer: 'unreadable' } });
        const record = recordIn(state, state === 'INTENT' ? {} : { taskId: 'T1' });
        const step = transition(record, substitute!, policy);
        expect(step.next.kind).not.toBe('resend');
        if (kind === 'search-result') expect(step.next.kind).not.toBe('search');
        if (kind === 'send-answered' && 'limit' in unacceptable && state === 'INTENT') expect(step.next).toMatchObject({ kind: 'needs-person' });
      }),
      { examples: [['send-answered', 'INTENT', stack], ['send-answered', 'INTENT', fault], ['task-read', 'WORKING', stack], ['search-result', 'INTENT', fault]] },
    );
  });

  it('an observation carrying no answer has none: its failure is ours and is thrown', () => {
    for (const kind of OBSERVATION_KINDS.filter((name) => !ANSWERS.includes(name))) expect(unprocessedAnswer(SAMPLES[kind], fault)).toBeUndefined();
    expect(unprocessedAnswer({ kind: 'reply-delivered', replyMessageId: 'R1', ownership: { kind: 'unknown' } }, fault)).toBeUndefined();
  });
});
