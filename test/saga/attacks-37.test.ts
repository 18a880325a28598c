/**
 * Attack round 37: the delegation core's paths after a resend released without proof (a deduplicating agent that
 * cannot list tasks), answers over a limit, ownership, flow control and terminal-state regressions. Real
 * redis-server, real fleet, raw node:http agents (exact bytes), counting SendMessage at each agent. The findings are
 * marked FIXED FINDING (each verified failing on main); the other `it`s hold and stay as regression tests.
 */
import { describe, expect, it } from 'vitest';
import { eventually, workflowSettled } from '../harness/fleet.ts';
import { artifactText, FAST_ATTACK_OPTIONS, finished, recordOf, useFieldCases, viewOf } from '../harness/field-cases.ts';
import { goneAgent } from '../harness/gone-agent.ts';
import { AU, ev, SU, task, taskEvent, userMessage } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** A scripted agent that does what it is asked at once: a COMPLETED task `taskId` in our context, holding our message. */
const doesItAtOnce = (taskId: string) => ({ SendMessage: (params: any) => ({ result: { task: task(taskId, 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'done' } }) } }) });

/*
 * FIXED FINDING (kind: "nothing of ours left" read from the mark alone). Input: step `hotel` at agent A (listed as
 * deduplicating, no ListTasks) with a compensation at agent C. A takes our SendMessage and cuts the connection
 * (delivery maybe: A may be booking); the search cannot conclude, the deduplicating agent lets the reconciler release
 * the row for a resend (releaseForResend-1.lua clears the mark), and A goes down: the resend waits for it (ECONNREFUSED,
 * nothing of THIS try left). The user cancels the workflow now. Observed on main: the cancel read `sendStartedAt`
 * alone (runs/cancel.ts `mayHaveSent`): hotel.1 CANCELED CANCELED_BEFORE_SEND "canceled before it was sent", the
 * workflow CANCELED, no compensation sent to C, though A holds our message and may have booked. Expected: an unbound
 * row whose earlier send may have left is no "never sent": a person (AMBIGUOUS, the evidence named), and the cancel
 * compensates what may have been done (C gets the compensation), A never sent to twice.
 */
describe('attack 37: a cancel while a resend released without proof waits for the agent', () => {
  it('A takes our message, cuts the connection and goes down; the workflow is canceled: never CANCELED as never sent, the compensation runs', async () => {
    const a = await goneAgent();
    try {
      const c = await h.agentWith(doesItAtOnce('TC'));
      const prefix = h.newPrefix();
      const producer = h.producer(prefix);
      await h.fleetFor(prefix, { reconcileIntervalMs: 300, requestTimeoutMs: 1_000, unreachableBackoff: { baseMs: 200, capMs: 500 }, deduplicatingAgents: [a.cardUrl] });
      const { id } = await producer.startWorkflow({
        workflowId: `cancel-${prefix}`,
        steps: [{ name: 'hotel', agent: a.cardUrl, message: { text: 'book' }, unreachableForMs: 600_000, compensation: { agent: c.cardUrl, message: { text: 'cancel the booking' } } }],
      });
      const ref = { workflowId: id, delegationId: 'hotel.1' };
      // Released for a resend on no proof, the resend refused at the door (A is down): INTENT, unmarked, waiting.
      await eventually(async () => {
        const row = await producer.journal.getDelegation(ref);
        return row?.state === 'INTENT' && row.resendCount >= 1 && row.unreachableCount >= 1 && row.sendStartedAt === undefined;
      }, 'hotel.1 released and waiting for A', 30_000, 20);
      await producer.cancel(id);
      const view = await workflowSettled(producer, id, 30_000);
      const row = await producer.journal.getDelegation(ref);
      expect(row?.state).toBe('AMBIGUOUS');
      expect(view.state).not.toBe('CANCELED');
      expect(a.sends).toHaveLength(1);
      // The cancel compensates what may have been done: C gets the compensation once, the workflow ends COMPENSATED.
      const final = await eventually(async () => {
        const current = await producer.get(id);
        return current && !['RUNNING', 'COMPENSATING'].includes(current.state) ? current : undefined;
      }, 'the workflow finished', 30_000, 50);
      expect(final.state).toBe('COMPENSATED');
      expect(c.count('SendMessage')).toBe(1);
    } finally {
      await a.close();
    }
  }, 90_000);
});

/*
 * HOLDS (terminal-state regressions on one stream). Input: SendMessage → T1 SUBMITTED (ours); SubscribeToTask: the
 * WORKING snapshot, artifact a1 "booked", COMPLETED, then (after the terminal event) an artifact-update a1 "changed"
 * and a2 "late", a FAILED status, a second COMPLETED Task carrying other artifacts; GetTask tells the truth (COMPLETED,
 * a1 "booked"). Expected and observed: COMPLETED with a1 "booked" only, one SendMessage: nothing after the terminal
 * event is applied (terminal states never regress; a finished attempt's artifacts are not rewritten).
 */
describe('attack 37: events after the terminal one on a stream', () => {
  it('COMPLETED, then an artifact rewrite, a late artifact, FAILED and a second COMPLETED: COMPLETED with the first result', async () => {
    const { producer, agent, id } = await h.setUpAndDelegate((seen) => {
      const ctx = () => ({ taskId: 'T1', contextId: seen.contextId });
      return {
        SubscribeToTask: () => ({
          sse: [
            taskEvent(task('T1', 'WORKING', { contextId: seen.contextId, history: [userMessage(seen.messageId!)] })),
            ev(AU('a1', false, true, 'booked', ctx())),
            ev(SU('COMPLETED', ctx())),
            ev(AU('a1', false, true, 'changed', ctx())),
            ev(AU('a2', false, true, 'late', ctx())),
            ev(SU('FAILED', ctx())),
            taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId, history: [userMessage(seen.messageId!)], artifacts: { a1: 'other', a3: 'more' } })),
          ],
        }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId, history: [userMessage(seen.messageId!)], artifacts: { a1: 'booked' } }) }),
      };
    }, FAST_ATTACK_OPTIONS);
    const record = await finished(producer, id, 30_000);
    expect(record.state).toBe('COMPLETED');
    const view = await viewOf(producer, id);
    expect(artifactText(view, 'a1')).toBe('booked');
    expect(view.artifacts.map((artifact) => artifact.artifactId)).toEqual(['a1']);
    expect(agent.count('SendMessage')).toBe(1);
    // Later reconciles of the finished row read nothing new into it.
    await eventually(async () => (await recordOf(producer, id))?.state === 'COMPLETED' && agent.count('SendMessage') === 1, 'still COMPLETED', 5_000, 50);
  }, 60_000);
});



/*
 * Attack (a verifier that never answers). Input: one fleet (verify concurrency 1) with two verifiers: `stuck`, whose
 * read never settles (a system of record that holds the connection, a verifier awaiting a promise that never comes),
 * and `ledger`, which answers at once (present). Workflow W1's step declares `stuck`, W2's declares `ledger`; each
 * step's agent books at once. Expected: one verifier cannot hold the verify queue: W2 COMPLETED; W1's verification is
 * bounded (`verifyTimeoutMs`), retried as any verifier failure, then `unknown` for a person (never absent).
 */
describe('attack 37: a verifier that never answers', () => {
  it('W1 verify hangs; W2 still verified and COMPLETED; W1 retried (then unknown), never absent, never re-delegated', async () => {
    const agent = await h.agentWith({ SendMessage: (params) => doesItAtOnce(`T-${params.message.messageId}`).SendMessage(params) });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    let stuckCalls = 0;
    const stuck = { verify: () => ((stuckCalls += 1), new Promise<never>(() => undefined)) };
    const ledger = { verify: async () => ({ effect: 'present' as const, evidence: 'in the ledger' }) };
    await h.fleetFor(prefix, { reconcileIntervalMs: 300, concurrency: { verify: 1 }, verifiers: { stuck, ledger }, verifyTimeoutMs: 300 });
    const w1 = await producer.startWorkflow({ workflowId: `stuck-${prefix}`, steps: [{ name: 'pay', agent: agent.cardUrl, message: { text: 'pay' }, verifier: { name: 'stuck' } }] });
    await eventually(async () => stuckCalls >= 1, 'the stuck verifier called', 20_000, 20);
    const w2 = await producer.startWorkflow({ workflowId: `ledger-${prefix}`, steps: [{ name: 'pay', agent: agent.cardUrl, message: { text: 'pay' }, verifier: { name: 'ledger' } }] });
    const second = await workflowSettled(producer, w2.id, 30_000);
    expect(second.state).toBe('COMPLETED');
    const first = await producer.journal.getDelegation({ workflowId: w1.id, delegationId: 'pay.1' });
    expect(first?.state).toBe('COMPLETED');
    expect(first?.effect).not.toBe('absent');
    expect(agent.count('SendMessage')).toBe(2);
  }, 60_000);
});
