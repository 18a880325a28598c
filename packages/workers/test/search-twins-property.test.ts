/**
 * Property (attack16): more than one task at the agent holds our messageId (the agent got our SendMessage twice). The
 * search reads on past the first holder (the rest of its pass, every candidate's full read) and concludes `several`
 * with every holder it saw, each once; one task listed on two pages is one holder. The search row never adopts, resends
 * or writes on `several`, whatever the purpose: a person decides, both ids named. The agent is a plain object paging
 * ListTasks over a generated list of tasks (no I/O).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NetworkError, TaskNotFoundError, type A2ATransport, type StreamResponse, type Task, type TaskState } from '@durable-a2a/a2a';
import type { DelegationRecord } from '@durable-a2a/shared';
import { findTaskByMessageId } from '../src/delegation/io/search.ts';
import type { Policy } from '../src/delegation/core/policy.ts';
import { transition } from '../src/delegation/core/transitions.ts';

const OUR_CONTEXT = 'ctx-ours';
const OUR_MESSAGE = 'msg-ours';

const taskArbitrary = fc.record({
  id: fc.constantFrom('T1', 'T2', 'T3', 'T4', 'T5', 'T6'),
  holds: fc.boolean(),
  /** What ListTasks shows of its history: the whole, an agent message only (trimmed), or no history. */
  listed: fc.constantFrom('full', 'trimmed', 'none'),
  context: fc.constantFrom(OUR_CONTEXT, ''),
  state: fc.constantFrom('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED'),
});
type Generated = typeof taskArbitrary extends fc.Arbitrary<infer Value> ? Value : never;

const userTurn = (messageId: string) => ({ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] });
const agentTurn = { messageId: 'agent-reply', role: 'ROLE_AGENT', parts: [{ text: 'ok' }] };

/** The task as GetTask reads it (whole history). */
const fullTask = (generated: Generated): Task =>
  ({ id: generated.id, contextId: generated.context, status: { state: generated.state }, history: [userTurn(generated.holds ? OUR_MESSAGE : `other-${generated.id}`), agentTurn] }) as Task;

/** The task as ListTasks shows it. */
const listedTask = (generated: Generated): Task => {
  const { history: _history, ...task } = fullTask(generated);
  if (generated.listed === 'full') return fullTask(generated);
  return (generated.listed === 'trimmed' ? { ...task, history: [agentTurn] } : task) as Task;
};

/**
 * An agent listing `tasks` `pageSize` at a time with tokens `p1`, `p2`, ...; with `repeatOne`, each page after the
 * first opens with the last task of the page before (a task that moved pages while we read).
 */
function transportOf(tasks: Generated[], pageSize: number, repeatOne: boolean): A2ATransport {
  return {
    listTasks: async (request: { pageToken?: string }) => {
      const page = request.pageToken ? Number(request.pageToken.slice(1)) : 0;
      const start = page * pageSize;
      const shown = tasks.slice(start, start + pageSize);
      const moved = repeatOne && page > 0 ? [tasks[start - 1]!] : [];
      const more = start + pageSize < tasks.length;
      return { tasks: [...moved, ...shown].map(listedTask), nextPageToken: more ? `p${page + 1}` : '', pageSize, totalSize: tasks.length };
    },
    getTask: async ({ id }: { id: string }) => fullTask(tasks.find((task) => task.id === id)!),
  } as unknown as A2ATransport;
}

const record = { messageId: OUR_MESSAGE, requestedContextId: OUR_CONTEXT, contextRefused: false, createdAt: 1_000_000 } as DelegationRecord;

describe('property: several tasks holding our messageId', () => {
  it('the search names every holder it saw and adopts none; one holder is found; a task listed twice is one holder', async () => {
    const twoOnOnePage: Generated[] = [
      { id: 'T2', holds: true, listed: 'full', context: OUR_CONTEXT, state: 'TASK_STATE_WORKING' },
      { id: 'T1', holds: true, listed: 'full', context: OUR_CONTEXT, state: 'TASK_STATE_COMPLETED' },
    ];
    const twoByReads: Generated[] = [
      { id: 'T2', holds: true, listed: 'trimmed', context: OUR_CONTEXT, state: 'TASK_STATE_WORKING' },
      { id: 'T3', holds: false, listed: 'full', context: '', state: 'TASK_STATE_WORKING' },
      { id: 'T1', holds: true, listed: 'none', context: '', state: 'TASK_STATE_COMPLETED' },
    ];
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(taskArbitrary, { selector: (task) => task.id, maxLength: 6 }), fc.integer({ min: 1, max: 3 }), fc.boolean(), async (tasks, pageSize, repeatOne) => {
        const result = await findTaskByMessageId(transportOf(tasks, pageSize, repeatOne), record, { marginMs: 1000, maxListTasksCalls: 10, now: () => 2_000_000 });
        const shownHolding = tasks.filter((task) => task.holds && task.listed === 'full').map((task) => task.id);
        // The listing shows no holder: every listed task is read in full.
        const holders = shownHolding.length > 0 ? shownHolding : tasks.filter((task) => task.holds).map((task) => task.id);
        if (holders.length > 1) {
          // Never adopt one: the other may be the work done twice.
          expect(result.kind).toBe('several');
          expect([...(result as { taskIds: string[] }).taskIds].sort()).toEqual([...holders].sort());
        } else if (holders.length === 1) {
          expect(result).toMatchObject({ kind: 'found', by: 'message-id', task: { id: holders[0] } });
        } else {
          // No holder: the context rule decides (search-context-property.test.ts); never a holder found, never `several`.
          expect(result.kind === 'not-found' || (result.kind === 'found' && result.by === 'context')).toBe(true);
        }
      }),
      {
        numRuns: 300,
        examples: [
          [twoOnOnePage, 2, false],
          [twoOnOnePage, 1, true],
          [twoByReads, 1, false],
          [twoByReads, 3, true],
        ],
      },
    );
  });

  it('the search row on `several`, whatever search found it (the reconciler\'s, the read after a partial stream, a held send\'s): no write, no resend, no adoption: a person, every id named', () => {
    const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3 } as unknown as Policy;
    const streamed = fc.option(
      fc.record({ state: fc.constantFrom<TaskState>('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED'), partialArtifacts: fc.constantFrom('appended' as const, 'resubscribed' as const, 'no-snapshot' as const) }),
      { nil: undefined },
    );
    fc.assert(
      fc.property(
        fc.constantFrom('reconcile', 'lost-check', 'read') ,
        fc.uniqueArray(fc.constantFrom('T1', 'T2', 'T3', 'T4'), { minLength: 2, maxLength: 4 }),
        fc.option(fc.constantFrom('T1', 'T9'), { nil: undefined }),
        fc.boolean(),
        streamed,
        (purpose, taskIds, boundTask, deduplicates, partial) => {
          const state = boundTask === undefined ? 'INTENT' : 'WORKING';
          const bound = { ...record, state, version: 3, fence: 1, resendCount: 0, ...(boundTask ? { taskId: boundTask } : {}) } as DelegationRecord;
          // A stream's finished status held back for its full read (GetTask unusable: ListTasks read it) settles nothing here either.
          const heldBack = partial && boundTask ? { heldBack: { responses: [{ statusUpdate: { taskId: boundTask, contextId: OUR_CONTEXT, status: { state: partial.state } } }] as [StreamResponse], partialArtifacts: partial.partialArtifacts } } : {};
          const step = transition(bound, { kind: 'search-result', purpose, deduplicates, finding: { kind: 'several', taskIds }, ...heldBack }, policy);
          expect(step.write).toBeUndefined();
          // Written on any unfinished row, whoever bound a task since the search (review20: refused by the version read).
          expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS', anyRow: true });
          for (const id of taskIds) expect((step.next as { message: string }).message).toContain(id);
          if ('heldBack' in heldBack) expect((step.next as { message: string }).message).toContain(partial!.state);
        },
      ),
      { examples: [['read', ['T1', 'T2'], 'T1', false, { state: 'TASK_STATE_COMPLETED', partialArtifacts: 'appended' }], ['reconcile', ['T2', 'T3'], undefined, false, undefined]] },
    );
  });

  it('the read after a partial stream: ListTasks showing another task than ours holding our message is a person naming both, never our streamed status settled alone', () => {
    const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3 } as unknown as Policy;
    fc.assert(
      fc.property(
        fc.constantFrom('T1', 'T2', 'T3'),
        fc.constantFrom('message-id', 'context', 'unknown'),
        fc.boolean(),
        fc.constantFrom<TaskState>('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED'),
        (foundId, by, complete, streamedState) => {
          const ours = { ...record, state: 'WORKING', taskId: 'T1', version: 3, fence: 1, resendCount: 0 } as DelegationRecord;
          const found = { id: foundId, contextId: OUR_CONTEXT, status: { state: 'TASK_STATE_COMPLETED' }, history: [userTurn(OUR_MESSAGE)], artifacts: [{ artifactId: 'a1', parts: [{ text: 'whole' }] }] } as Task;
          const ownership = by === 'unknown' ? { kind: 'unknown' as const } : { kind: 'proven' as const, by };
          const heldBack = { responses: [{ statusUpdate: { taskId: 'T1', contextId: OUR_CONTEXT, status: { state: streamedState } } }] as [StreamResponse], partialArtifacts: 'appended' as const };
          const step = transition(ours, { kind: 'search-result', purpose: 'read', deduplicates: false, finding: { kind: 'found', task: found, complete, ownership }, heldBack }, policy);
          const person = step.next.kind === 'needs-person';
          // Another task shown holding our message by its history: the agent has it twice. Anything else is not.
          expect(person).toBe(foundId !== 'T1' && by === 'message-id');
          if (person) {
            expect(step.write).toBeUndefined();
            expect(step.next).toMatchObject({ code: 'AMBIGUOUS', message: expect.stringContaining(foundId) });
            expect((step.next as { message: string }).message).toContain('T1');
          } else {
            // Our task read in full, or the streamed status kept (warned): the result is never lost.
            expect(step.write).toBeDefined();
          }
        },
      ),
      { examples: [['T2', 'message-id', true, 'TASK_STATE_COMPLETED'], ['T1', 'message-id', true, 'TASK_STATE_COMPLETED'], ['T3', 'context', false, 'TASK_STATE_FAILED']] },
    );
  });

  it('the read by ListTasks (GetTask unusable or about another task), no stream held back: another task than ours shown holding our message is a person naming both (review20: before, a PROTOCOL_ERROR round and our task settled later)', () => {
    const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3 } as unknown as Policy;
    fc.assert(
      fc.property(
        fc.constantFrom('T1', 'T2', 'T3'),
        fc.option(fc.constantFrom('T1'), { nil: undefined }),
        fc.constantFrom('message-id', 'context', 'unknown'),
        fc.boolean(),
        fc.constantFrom<TaskState>('TASK_STATE_COMPLETED', 'TASK_STATE_WORKING'),
        (foundId, boundTask, by, complete, state) => {
          const row = { ...record, state: boundTask ? 'WORKING' : 'INTENT', version: 3, fence: 1, resendCount: 0, ...(boundTask ? { taskId: boundTask } : {}) } as DelegationRecord;
          const found = { id: foundId, contextId: OUR_CONTEXT, status: { state }, history: [userTurn(OUR_MESSAGE)], artifacts: [{ artifactId: 'a1', parts: [{ text: 'whole' }] }] } as Task;
          const ownership = by === 'unknown' ? { kind: 'unknown' as const } : { kind: 'proven' as const, by };
          const step = transition(row, { kind: 'search-result', purpose: 'read', deduplicates: false, why: 'GetTask answered another task', finding: { kind: 'found', task: found, complete, ownership } }, policy);
          const twice = boundTask !== undefined && foundId !== boundTask && by === 'message-id';
          expect(step.next.kind === 'needs-person').toBe(twice);
          if (twice) {
            expect(step.write).toBeUndefined();
            expect(step.next).toMatchObject({ code: 'AMBIGUOUS', message: expect.stringContaining(foundId), anyRow: true });
            expect((step.next as { message: string }).message).toContain(boundTask);
          }
          // Never a write of another task than ours onto a bound row.
          const writes = step.write === undefined ? [] : Array.isArray(step.write) ? step.write : [step.write];
          if (boundTask) for (const write of writes) if (write.kind === 'snapshot') expect(write.task.id).toBe(boundTask);
        },
      ),
      { examples: [['T2', 'T1', 'message-id', true, 'TASK_STATE_COMPLETED'], ['T1', 'T1', 'message-id', true, 'TASK_STATE_COMPLETED'], ['T2', undefined, 'message-id', true, 'TASK_STATE_COMPLETED'], ['T3', 'T1', 'context', false, 'TASK_STATE_WORKING']] },
    );
  });

  it('a message for a person naming task ids the agent gave is bounded whatever it listed (review20): the first ids, clipped, and how many; a few short ids each named in full', () => {
    const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3 } as unknown as Policy;
    const id = fc.oneof(fc.constantFrom('T1', 'T2', 'T3'), fc.string({ minLength: 1, maxLength: 400 }));
    fc.assert(
      fc.property(fc.uniqueArray(id, { minLength: 2, maxLength: 40 }), fc.option(id, { nil: undefined }), fc.constantFrom('reconcile', 'lost-check', 'read'), (taskIds, boundTask, purpose) => {
        const row = { ...record, state: boundTask ? 'WORKING' : 'INTENT', version: 3, fence: 1, resendCount: 0, ...(boundTask ? { taskId: boundTask } : {}) } as DelegationRecord;
        const several = transition(row, { kind: 'search-result', purpose, deduplicates: false, finding: { kind: 'several', taskIds } }, policy);
        const candidates = transition(row, { kind: 'search-result', purpose, deduplicates: false, finding: { kind: 'not-found', inconclusive: true, paginationBroken: false, contextRefused: false, candidates: taskIds } }, policy);
        for (const step of [several, candidates]) {
          if (step.next.kind !== 'needs-person') continue;
          // 10 ids of 128 characters, our bound id, the message's own words.
          expect(step.next.message.length).toBeLessThan(12 * 130 + 400);
        }
        const message = (several.next as { message: string }).message;
        expect(message).toContain(`${taskIds.length} tasks`);
        if (taskIds.length <= 10 && taskIds.every((taskId) => taskId.length <= 128)) for (const taskId of taskIds) expect(message).toContain(taskId);
        if (taskIds.length > 10) expect(message).toContain(`${taskIds.length - 10} more`);
      }),
      { endOnFailure: true, examples: [[Array.from({ length: 40 }, (_, n) => `T${n}-${'x'.repeat(300)}`), 'T1', 'reconcile'], [['T1', 'T2'], undefined, 'read']] },
    );
  });

  it('the check before LOST: a task other than ours proven to hold our message (by messageId or as the only task in our context) is never LOST (a re-delegation): a person, both ids named', () => {
    const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3 } as unknown as Policy;
    fc.assert(
      fc.property(
        fc.constantFrom('T1', 'T2', 'T3'),
        fc.constantFrom('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_INPUT_REQUIRED'),
        fc.constantFrom('message-id', 'context', 'unknown'),
        fc.boolean(),
        (foundId, state, by, complete) => {
          const ours = { ...record, state: 'WORKING', taskId: 'T1', version: 3, fence: 1, resendCount: 0 } as DelegationRecord;
          const found = { id: foundId, contextId: OUR_CONTEXT, status: { state }, history: [userTurn(OUR_MESSAGE)] } as Task;
          const ownership = by === 'unknown' ? { kind: 'unknown' as const } : { kind: 'proven' as const, by };
          const step = transition(ours, { kind: 'search-result', purpose: 'lost-check', deduplicates: false, why: 'the agent denied task T1 3 times', finding: { kind: 'found', task: found, complete, ownership } }, policy);
          const writes = step.write === undefined ? [] : Array.isArray(step.write) ? step.write : [step.write];
          const lost = writes.some((write) => write.kind === 'outcome' && write.state === 'LOST');
          if (foundId === 'T1') expect(lost).toBe(false);
          else if (by !== 'unknown') {
            expect(lost).toBe(false);
            expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS' });
            expect((step.next as { message: string }).message).toContain('T1');
            expect((step.next as { message: string }).message).toContain(foundId);
          }
        },
      ),
      { examples: [['T2', 'TASK_STATE_COMPLETED', 'message-id', true], ['T3', 'TASK_STATE_WORKING', 'context', false], ['T1', 'TASK_STATE_WORKING', 'message-id', false]] },
    );
  });

  it('the check before LOST: LOST only on a conclusive absence (no candidate that may hold our message, pagination intact); else a person', () => {
    const policy = { now: () => 5_000_000, random: () => 0.5, sendAttempts: 3 } as unknown as Policy;
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), fc.boolean(), fc.uniqueArray(fc.constantFrom('T2', 'T3'), { maxLength: 2 }), (inconclusive, paginationBroken, contextRefused, candidates) => {
        const ours = { ...record, state: 'WORKING', taskId: 'T1', version: 3, fence: 1, resendCount: 0 } as DelegationRecord;
        const step = transition(ours, { kind: 'search-result', purpose: 'lost-check', deduplicates: false, finding: { kind: 'not-found', inconclusive, paginationBroken, contextRefused, candidates } }, policy);
        const writes = step.write === undefined ? [] : Array.isArray(step.write) ? step.write : [step.write];
        const lost = writes.some((write) => write.kind === 'outcome' && write.state === 'LOST');
        expect(lost).toBe(!inconclusive && !paginationBroken);
        if (!lost) expect(step.next).toMatchObject({ kind: 'needs-person', code: 'AMBIGUOUS' });
      }),
      { examples: [[true, false, false, ['T2']], [false, true, false, []], [false, false, false, []]] },
    );
  });
});

describe('property (review16a): a candidate whose full read fails', () => {
  it('never undoes a holder read in full: the holder is found (or several are named); with no holder read, the read error is thrown; a drop ends the reads', async () => {
    type Read = 'ok' | 'not-found' | 'drop';
    const withReads = fc.record({ task: taskArbitrary, read: fc.constantFrom<Read>('ok', 'not-found', 'drop') });
    const listedTrimmed = (tasks: { task: Generated }[]): Generated[] => tasks.map(({ task }) => ({ ...task, listed: task.listed === 'full' ? 'trimmed' : task.listed }));
    let reads = 0;
    const agentOf = (tasks: { task: Generated; read: string }[]): A2ATransport => {
      const base = transportOf(listedTrimmed(tasks), 50, false);
      return {
        listTasks: base.listTasks,
        getTask: async ({ id }: { id: string }) => {
          reads++;
          const entry = tasks.find(({ task }) => task.id === id)!;
          if (entry.read === 'not-found') throw new TaskNotFoundError();
          if (entry.read === 'drop') throw new NetworkError('connection reset');
          return fullTask(entry.task);
        },
      } as unknown as A2ATransport;
    };
    const holding = (id: Generated['id'], read: Read): { task: Generated; read: Read } => ({ task: { id, holds: true, listed: 'trimmed' as const, context: OUR_CONTEXT, state: 'TASK_STATE_COMPLETED' as const }, read });
    const other = (id: Generated['id'], read: Read): { task: Generated; read: Read } => ({ task: { id, holds: false, listed: 'none' as const, context: OUR_CONTEXT, state: 'TASK_STATE_WORKING' as const }, read });
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(withReads, { selector: ({ task }) => task.id, maxLength: 6 }), async (tasks) => {
        // No listed task shows our message (histories trimmed): every candidate is read in full, in listed order, up
        // to the first transport failure (a drop ends the reads: an agent gone down is not waited on once per task).
        reads = 0;
        const dropAt = tasks.findIndex(({ read }) => read === 'drop');
        const tried = dropAt < 0 ? tasks : tasks.slice(0, dropAt + 1);
        const readable = tried.filter(({ task, read }) => task.holds && read === 'ok').map(({ task }) => task.id);
        const unreadable = tried.some(({ read }) => read !== 'ok');
        const outcome = await findTaskByMessageId(agentOf(tasks), record, { marginMs: 1000, maxListTasksCalls: 10, now: () => 2_000_000 }).then(
          (result) => result,
          (error: unknown) => ({ kind: 'thrown' as const, error }),
        );
        if (readable.length > 1) {
          expect(outcome.kind).toBe('several');
          expect([...(outcome as { taskIds: string[] }).taskIds].sort()).toEqual([...readable].sort());
        } else if (readable.length === 1) expect(outcome).toMatchObject({ kind: 'found', by: 'message-id', task: { id: readable[0] } });
        else if (unreadable) expect(outcome.kind).toBe('thrown');
        else expect(outcome.kind === 'not-found' || (outcome.kind === 'found' && outcome.by === 'context')).toBe(true);
        // Reads stop at a drop; without one, at most two context passes list the candidates, each read once.
        expect(reads).toBeLessThanOrEqual(tried.length);
      }),
      {
        numRuns: 300,
        examples: [
          [[holding('T1', 'ok'), other('T2', 'not-found')]],
          [[other('T2', 'drop'), holding('T1', 'ok')]],
          [[holding('T1', 'ok'), holding('T2', 'not-found'), holding('T3', 'ok')]],
          [[holding('T1', 'not-found'), other('T2', 'ok')]],
          [[other('T2', 'drop'), other('T3', 'drop'), other('T4', 'drop'), holding('T1', 'ok')]],
        ],
      },
    );
  });
});

describe('property (review16a): our messageId on an agent\'s message only', () => {
  it('is never a holder (never `several`, never adopted by messageId) and never a proven absence: holders are the tasks with our message as ours', async () => {
    const kinds = fc.record({ id: fc.constantFrom('T1', 'T2', 'T3', 'T4', 'T5'), ours: fc.constantFrom('user', 'agent-quote', 'both', 'none'), context: fc.constantFrom(OUR_CONTEXT, 'ctx-other'), listed: fc.boolean() });
    type Kind = typeof kinds extends fc.Arbitrary<infer Value> ? Value : never;
    const history = (kind: Kind) => [
      kind.ours === 'user' || kind.ours === 'both' ? userTurn(OUR_MESSAGE) : userTurn(`other-${kind.id}`),
      kind.ours === 'agent-quote' || kind.ours === 'both' ? { ...agentTurn, messageId: OUR_MESSAGE } : agentTurn,
    ];
    const full = (kind: Kind) => ({ id: kind.id, contextId: kind.context, status: { state: 'TASK_STATE_COMPLETED' }, history: history(kind) }) as Task;
    const agentOf = (tasks: Kind[]): A2ATransport =>
      ({
        listTasks: async () => ({ tasks: tasks.map((kind) => (kind.listed ? full(kind) : { ...full(kind), history: undefined })), nextPageToken: '', pageSize: 50, totalSize: tasks.length }),
        getTask: async ({ id }: { id: string }) => full(tasks.find((kind) => kind.id === id)!),
      }) as unknown as A2ATransport;
    const ofKind = (id: Kind['id'], ours: Kind['ours'], listed: boolean): Kind => ({ id, ours, context: OUR_CONTEXT, listed });
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(kinds, { selector: (kind) => kind.id, maxLength: 5 }), async (tasks) => {
        const result = await findTaskByMessageId(agentOf(tasks), record, { marginMs: 1000, maxListTasksCalls: 10, now: () => 2_000_000 });
        const holding = (kind: Kind) => kind.ours === 'user' || kind.ours === 'both';
        const shown = tasks.filter((kind) => kind.listed && holding(kind)).map((kind) => kind.id);
        const holders = shown.length > 0 ? shown : tasks.filter(holding).map((kind) => kind.id);
        if (holders.length > 1) expect([...(result as { taskIds: string[] }).taskIds].sort()).toEqual([...holders].sort());
        else if (holders.length === 1) expect(result).toMatchObject({ kind: 'found', by: 'message-id', task: { id: holders[0] } });
        else {
          // A quote proves delivery: never a conclusive absence (a resend), never a task adopted by messageId.
          expect(result.kind === 'found' && result.by === 'message-id').toBe(false);
          if (result.kind === 'not-found' && tasks.some((kind) => kind.ours === 'agent-quote')) expect(result.inconclusive).toBe(true);
        }
      }),
      {
        numRuns: 300,
        examples: [
          [[ofKind('T2', 'agent-quote', true), ofKind('T1', 'user', true)]],
          [[ofKind('T2', 'agent-quote', false), ofKind('T1', 'both', false)]],
          [[{ ...ofKind('T2', 'agent-quote', true), context: 'ctx-other' }]],
          [[ofKind('T1', 'user', true), ofKind('T2', 'both', true)]],
        ],
      },
    );
  });
});
