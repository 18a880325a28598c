/**
 * deadline35 (the kind "the agent may hold our message, yet the step is handed to another agent"): the reconciler's
 * `deadline-passed` row wrote FAILED (AGENT_UNREACHABLE on a row that waited for its agent, DEADLINE_EXCEEDED on a row
 * never answered: both re-delegable) on the version alone. A row that keeps suspect evidence (a task a refused push
 * showed holding our message: noteSuspect-1.lua, pending or counted lost; a suspect does not move the version, and an
 * unbound row's suspects are not read) then had its step sent to a second agent while the first may be doing it. Now
 * such a row ends AMBIGUOUS for a person, the suspects named, never FAILED; without suspects the FAILED stands.
 * Real redis-server, a real fleet's context (no queue workers, its clock two days ahead: past the 24 h deadline); the
 * reconcile is run by hand (`reconcileDelegation`).
 */
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { SUSPECT_TASK_ID_MAX, type DelegationRef } from '@durable-a2a/shared';
import { reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { apply } from '../../packages/workers/src/delegation/apply.ts';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { startTestFleet } from '../harness/fleet.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;
const UNREACHABLE = { code: 'AGENT_UNREACHABLE', message: 'ECONNREFUSED', retryable: true, delivery: 'not-sent' } as const;

/** Evidence on the row before the deadline's reconcile: none, a suspect pending, one counted lost (an id too long to keep). */
type Evidence = 'none' | 'pending' | 'lost';

/** An INTENT main.1 past its deadline, waiting for its agent (`waited`: one unreachable try noted) or never tried, with `evidence`; the row after one reconcile. */
async function deadlineScene(waited: boolean, evidence: Evidence, race = false) {
  const prefix = `dl35-${++counter}-${Date.now()}`;
  const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, queues: [], reconcileIntervalMs: 600_000, now: () => Date.now() + 2 * 86_400_000 });
  keep(fleet, producer);
  const ref: DelegationRef = { workflowId: `wf-${prefix}`, delegationId: 'main.1' };
  const definition = JSON.stringify({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: 'http://agent.example/.well-known/agent-card.json', message: { text: 'go' } }] });
  expect(await producer.journal.createWorkflow(ref.workflowId, { state: 'RUNNING', definition, createdAt: String(Date.now()) }, { ...intentRow(ref.workflowId), createdAt: String(Date.now()) })).toBe(true);
  if (waited) {
    // A try before its mark (the Agent Card refused): nothing sent, the row waits for its next try.
    const fence = await producer.journal.claim(ref, 'send-run');
    await producer.journal.noteUnreachable(ref, fence, { error: UNREACHABLE, nextTryAt: Date.now() + 60_000, marked: false });
    await producer.journal.lease(ref, 'release', 'send-run');
  }
  // `race`: the reconciler read the row before the suspect was noted (a suspect moves no version) and decides from that read.
  const read = (await producer.journal.getDelegation(ref))!;
  if (evidence === 'pending') expect(await producer.journal.noteSuspect(ref, 'T-suspect')).toBe('kept');
  if (evidence === 'lost') expect(await producer.journal.noteSuspect(ref, '9'.repeat(SUSPECT_TASK_ID_MAX + 1))).toBe('too-long');
  const before = (await producer.journal.getDelegation(ref))!;
  expect(before.state).toBe('INTENT');
  if (race) {
    await apply(fleet.context, read, { kind: 'deadline-passed', deadlineAt: Date.now() }, { source: 'reconcile' });
    // Refused (the row is not as read): nothing written, the next reconcile decides.
    expect(await producer.journal.getDelegation(ref)).toEqual(before);
  }
  const outcome = await reconcileDelegation(fleet.context, ref, 'check-1');
  return { outcome, before, after: (await producer.journal.getDelegation(ref))! };
}

describe('deadline-passed: never a re-delegable FAILED over suspect evidence', () => {
  it('the case: a row waiting for its agent, a suspect pending, past its deadline: AMBIGUOUS naming the suspect (was: FAILED AGENT_UNREACHABLE, re-delegated)', async () => {
    const { outcome, after } = await deadlineScene(true, 'pending');
    expect(outcome).toBe('deadline-exceeded');
    expect(after.state).toBe('AMBIGUOUS');
    expect(after.error?.message).toContain('T-suspect');
  });

  it('a suspect noted after the reconciler read the row: its FAILED is refused, and the next reconcile ends it AMBIGUOUS (was: FAILED on the version alone)', async () => {
    const { outcome, after } = await deadlineScene(true, 'pending', true);
    expect(outcome).toBe('deadline-exceeded');
    expect(after.state).toBe('AMBIGUOUS');
    expect(after.error?.message).toContain('T-suspect');
  });

  it.each([
    [true, 'lost'],
    [false, 'pending'],
    [false, 'lost'],
    [true, 'none'],
    [false, 'none'],
  ] as const)('waited %s, evidence %s: AMBIGUOUS with evidence, else FAILED as before', async (waited, evidence) => {
    const { after } = await deadlineScene(waited, evidence);
    if (evidence === 'none') {
      expect(after.state).toBe('FAILED');
      expect(after.error?.code).toBe(waited ? 'AGENT_UNREACHABLE' : 'DEADLINE_EXCEEDED');
      return;
    }
    expect(after.state).toBe('AMBIGUOUS');
    expect(after.error?.message).toMatch(evidence === 'lost' ? /1 other task/ : /T-suspect/);
  });
});
