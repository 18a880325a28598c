/**
 * Attacks on the send lease handed straight to the local follow (applyStatus-5.lua ARGV[14] 'handover:…')
 * and on the settle that drops its index entries inside updateWorkflow-4.lua. Each case checks what the agent saw
 * (SendMessage and SubscribeToTask counts), who holds the delegation's lease (a lease held by nobody makes the
 * reconciler wait `lockDurationMs`; one held by another holder must keep every other stream away) and the
 * delegation duration histogram (observed once per settled delegation).
 */
import { describe, expect, it } from 'vitest';
import { enqueueFollow, Journal, type DelegationRecord, type StatusChange } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { intentRow } from '../harness/journal-rows.ts';
import { finished, recordOf, ref, useFieldCases, workflowSettled } from '../harness/field-cases.ts';
import { useRedisClient } from '../harness/redis.ts';
import { agentMessage, task, taskEvent } from '../harness/scripted-agent.ts';
import { eventually } from '../harness/fleet.ts';

const h = useFieldCases();
/** No periodic reconcile inside a case: what the handover left is what the case sees. */
const QUIET = { lockDurationMs: 30_000, reconcileIntervalMs: 60_000 };
const redis = useRedisClient(h.redisServer);

/** Records every token the fleet's `localFollowToken` issued (a token issued: the send's answer asked for a handover). */
function recordTokens(fleet: Fleet, onIssue?: (token: string) => void): string[] {
  const tokens: string[] = [];
  const issue = fleet.context.localFollowToken!.bind(fleet.context);
  fleet.context.localFollowToken = () => {
    const token = issue();
    if (token) {
      tokens.push(token);
      onIssue?.(token);
    }
    return token;
  };
  return tokens;
}

/** Observations of the delegation duration histogram so far (its `_count`, all states). */
async function durationsObserved(fleet: Fleet): Promise<number> {
  const { values } = await fleet.metrics.delegationDuration.get();
  return values.filter((value) => value.metricName?.endsWith('_count')).reduce((sum, value) => sum + value.value, 0);
}

const leaseHolder = (p: { journal: Journal }, id: string) => redis().get(p.journal.keys.followLease(id, 'main.1'));

describe('attack: the send lease handed over to the local follow', () => {
  it('happy path: the follow streams under the handed lease (its token, the fence one past the mark), one SendMessage, one stream, one duration', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({ SubscribeToTask: () => ({ sse: [{ waitMs: 1_000 }, taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId }))], endAfter: 'hang' }) }),
      QUIET,
    );
    const tokens = recordTokens(fleet);
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'handover', idempotencyKey: 'handover' });
    await eventually(async () => agent.count('SubscribeToTask') === 1 || undefined, 'the stream opened', 10_000);
    expect(tokens).toHaveLength(1);
    // The mark claimed (fence 1), the handover claimed again for the follow (fence 2), as takeFollow would.
    expect(await redis().hget(p.journal.keys.delegation(id, 'main.1'), 'owner')).toBe(tokens[0]);
    expect((await recordOf(p, id))!.fence).toBe(2);
    expect(await leaseHolder(p, id)).toBe(tokens[0]);
    // A writer with the send's fence (the mark's) is refused now.
    await expect(p.journal.applyStatus(ref(id), { fence: 1, mode: 'event', state: 'WORKING', statusTimestamp: new Date().toISOString() })).rejects.toMatchObject({ code: 'FENCE_LOST' });
    // The reconciler's next check moved with the handover (one server; on a Cluster the follow's own ZADD beside its stream).
    await eventually(async () => ((await p.journal.nextCheckAt(ref(id))) ?? 0) > Date.now() + 20_000 || undefined, 'the next check a reconcile interval ahead', 2_000);
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
    await eventually(async () => (await metricLocalFollows(fleet)) === 0 || undefined, 'the follow ended', 5_000);
    expect(await leaseHolder(p, id)).toBeNull();
    expect(await p.journal.nextCheckAt(ref(id))).toBeUndefined();
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(await durationsObserved(fleet)).toBe(1);
  }, 20_000);

  it('an answer that parks (INPUT_REQUIRED): no handover kept, the lease gone, no stream, parked once', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      () => ({
        SendMessage: (params) => ({ result: { task: task('T-Q', 'INPUT_REQUIRED', { contextId: params.message.contextId, history: [params.message], message: agentMessage('which date?', { contextId: params.message.contextId }) }) } }),
      }),
      QUIET,
    );
    const tokens = recordTokens(fleet);
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'parks', idempotencyKey: 'parks' });
    await eventually(async () => (await recordOf(p, id))?.state === 'INPUT_REQUIRED' || undefined, 'parked', 10_000);
    await eventually(async () => (await metricLocalFollows(fleet)) === 0, 'no local follow running', 5_000);
    expect(tokens).toHaveLength(1);
    expect(await leaseHolder(p, id)).toBeNull();
    expect(agent.count('SubscribeToTask')).toBe(0);
    expect(agent.count('SendMessage')).toBe(1);
  }, 20_000);

  it('a workflow canceled while its send is in flight: the handed lease goes back before the CancelTask, one SendMessage', async () => {
    let cancel!: () => Promise<void>;
    const { producer: p, agent, fleet } = await h.setUp(
      () => ({
        SendMessage: async (params) => {
          await cancel();
          return { result: { task: task('T-C', 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } };
        },
        CancelTask: () => ({ result: task('T-C', 'CANCELED') }),
        SubscribeToTask: () => ({ sse: [], endAfter: 'hang' }),
        GetTask: () => ({ result: task('T-C', 'CANCELED') }),
      }),
      QUIET,
    );
    const tokens = recordTokens(fleet);
    let id = '';
    cancel = () => p.cancel(id);
    ({ id } = await p.delegate({ agent: agent.cardUrl, text: 'cancel me', idempotencyKey: 'cancel-me' }));
    await eventually(async () => agent.count('CancelTask') >= 1, 'CancelTask sent', 10_000);
    expect(tokens).toHaveLength(1);
    // The router gave the handed lease back before it enqueued the cancel: nobody holds it for lockDurationMs.
    const holder = await leaseHolder(p, id);
    expect(holder === null || holder !== tokens[0]).toBe(true);
    // The task ends CANCELED: the settle's decision finishes the workflow and drops both index entries, observed once.
    expect((await workflowSettled(p, id)).state).toBe('CANCELED');
    await eventually(async () => (await durationsObserved(fleet)) >= 1 || undefined, 'a duration observed', 5_000);
    expect(await p.journal.nextCheckAt(ref(id))).toBeUndefined();
    expect(await p.journal.nextCheckAt(ref(id, '*'))).toBeUndefined();
    expect(await durationsObserved(fleet)).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
  }, 20_000);

  it('the fleet closing between the handover\'s token and the router: the handed lease goes back, a follow job takes over, one SendMessage', async () => {
    let closing: Promise<void> | undefined;
    const { producer: p, agent, fleet, prefix } = await h.setUp(
      (seen) => ({ SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId }))], endAfter: 'hang' }) }),
      QUIET,
    );
    // close() aborts the shutdown signal at once (then waits for this send job): the lease is handed over by the
    // answer's script, and the router finds the fleet closing.
    const tokens = recordTokens(fleet, () => {
      closing ??= fleet.close();
    });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'closing', idempotencyKey: 'closing' });
    await eventually(async () => closing !== undefined || undefined, 'the answer arrived', 10_000);
    await closing;
    expect(tokens).toHaveLength(1);
    expect((await recordOf(p, id))!.state).toBe('SUBMITTED');
    expect(await leaseHolder(p, id)).toBeNull();
    const second = await h.fleetFor(prefix, QUIET);
    expect((await finished(p, id)).state).toBe('COMPLETED');
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
    await eventually(async () => (await durationsObserved(second)) === 1 || undefined, 'one duration observed', 5_000);
  }, 20_000);

  it('a journal error after the answer\'s script ran (the handover done): both leases go back, no second SendMessage, the reconciler finishes it', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId }))], endAfter: 'hang' }),
        GetTask: () => ({ result: task('T1', 'COMPLETED', { contextId: seen.contextId }) }),
      }),
      { lockDurationMs: 30_000, reconcileIntervalMs: 1_000 },
    );
    const tokens = recordTokens(fleet);
    const journal = fleet.context.journal;
    const applyStatus = journal.applyStatus.bind(journal);
    let thrown = 0;
    // The reply of the handover's script lost (a connection dropped after the script ran): the caller sees an error.
    journal.applyStatus = async (target, change: StatusChange) => {
      const result = await applyStatus(target, change);
      if (change.endsLease?.when === 'handover' && thrown++ === 0) throw new Error('connection lost after the script ran');
      return result;
    };
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'lost reply', idempotencyKey: 'lost-reply' });
    await eventually(async () => thrown > 0 || undefined, 'the handover ran', 10_000);
    // Given back at once by the send (its catch), not left to run out for lockDurationMs.
    await eventually(async () => (await leaseHolder(p, id)) === null || (await leaseHolder(p, id)) !== tokens[0] || undefined, 'the handed lease given back', 3_000);
    expect((await finished(p, id)).state).toBe('COMPLETED');
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(1);
  }, 20_000);
});

describe('attack: handover corners', () => {
  it('the agent\'s share of follow slots full when the handed follow starts: the lease goes back at once, a delayed follow finishes it', async () => {
    let release!: () => void;
    const firstDone = new Promise<void>((resolve) => (release = resolve));
    const { producer: p, agent, fleet } = await h.setUp(
      () => ({
        SendMessage: (params) => ({ result: { task: task(params.message.parts[0].text === 'first' ? 'T-1' : 'T-2', 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } }),
        SubscribeToTask: async (params) => {
          if (params.id === 'T-1') await firstDone;
          return { sse: [taskEvent(task(params.id, 'COMPLETED', { contextId: agent.calls('SendMessage')[0]!.params.message.contextId }))], endAfter: 'hang' };
        },
        GetTask: (params) => ({ result: task(params.id, 'WORKING') }),
      }),
      // One slot per agent, and no room beyond it (a tenth of 2 rounds up to 1): the second follow must wait.
      { ...QUIET, concurrency: { follow: 2 }, followSlotsPerAgent: 1, localFollowSlots: 5 },
    );
    const tokens = recordTokens(fleet);
    const first = await p.delegate({ agent: agent.cardUrl, text: 'first', idempotencyKey: 'share-1' });
    await eventually(async () => agent.count('SubscribeToTask') === 1 || undefined, 'the first stream open', 10_000);
    const second = await p.delegate({ agent: agent.cardUrl, text: 'second', idempotencyKey: 'share-2' });
    await eventually(async () => (await recordOf(p, second.id))?.state === 'WORKING' || undefined, 'the second answer journaled', 10_000);
    expect(tokens).toHaveLength(2);
    // Turned away by the agent's share: the handed lease is not left to run out (30 s) before the delayed follow.
    await eventually(async () => (await leaseHolder(p, second.id)) !== tokens[1] || undefined, 'the second lease given back', 3_000);
    release();
    expect((await workflowSettled(p, first.id)).state).toBe('COMPLETED');
    expect((await workflowSettled(p, second.id)).state).toBe('COMPLETED');
    expect(agent.count('SendMessage')).toBe(2);
  }, 20_000);

  it('scripts flushed (NOSCRIPT) just before the answer that hands the lease over: the follow streams once, the lease gone at the end', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      (seen) => ({
        SendMessage: async (params) => {
          seen.contextId ??= params.message.contextId;
          await redis().call('SCRIPT', 'FLUSH');
          return { result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } };
        },
        SubscribeToTask: () => ({ sse: [taskEvent(task('T1', 'COMPLETED', { contextId: seen.contextId }))], endAfter: 'hang' }),
      }),
      QUIET,
    );
    const tokens = recordTokens(fleet);
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'flush', idempotencyKey: 'flush-handover' });
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
    await eventually(async () => (await metricLocalFollows(fleet)) === 0 || undefined, 'the follow ended', 5_000);
    expect(tokens).toHaveLength(1);
    expect(await leaseHolder(p, id)).toBeNull();
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('SubscribeToTask')).toBe(1);
    expect(await durationsObserved(fleet)).toBe(1);
  }, 20_000);

  it('parallel steps finishing at the same moment: each delegation\'s duration observed once, every index entry of the workflow gone', async () => {
    const WORKFLOWS = 3;
    let arrived = 0;
    let go!: () => void;
    const together = new Promise<void>((resolve) => (go = resolve));
    const { producer: p, agent, fleet } = await h.setUp(
      () => ({
        SendMessage: (params) => ({ result: { task: task(`T-${params.message.messageId}`, 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } }),
        SubscribeToTask: async (params) => {
          // Every stream's terminal event leaves at once: the settles of a workflow's two steps race.
          if (++arrived >= WORKFLOWS * 2) go();
          await Promise.race([together, new Promise((resolve) => setTimeout(resolve, 5_000))]);
          const sent = agent.calls('SendMessage').find((call) => `T-${call.params.message.messageId}` === params.id)!;
          return { sse: [taskEvent(task(params.id, 'COMPLETED', { contextId: sent.params.message.contextId }))], endAfter: 'hang' };
        },
      }),
      QUIET,
    );
    const ids: string[] = [];
    for (let index = 0; index < WORKFLOWS; index++) {
      const { id } = await p.startWorkflow({
        workflowId: `parallel-${index}`,
        steps: [
          { name: 'a', agent: agent.cardUrl, message: { text: 'a' } },
          { name: 'b', agent: agent.cardUrl, after: [], message: { text: 'b' } },
        ],
      });
      ids.push(id);
    }
    for (const id of ids) expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
    await eventually(async () => (await durationsObserved(fleet)) >= WORKFLOWS * 2 || undefined, 'every duration observed', 5_000);
    await eventually(async () => (await metricLocalFollows(fleet)) === 0 || undefined, 'the follows ended', 5_000);
    expect(await durationsObserved(fleet)).toBe(WORKFLOWS * 2);
    for (const id of ids) {
      for (const delegationId of ['a.1', 'b.1', '*']) expect(await p.journal.nextCheckAt(ref(id, delegationId)), `${id}/${delegationId}`).toBeUndefined();
    }
    expect(agent.count('SendMessage')).toBe(WORKFLOWS * 2);
  }, 20_000);
});

describe('attack: the settle that finishes the workflow drops the index entries', () => {
  it('a late second settle of a step already settled, whose decision finishes the workflow: its duration is not observed again', async () => {
    const { producer: p, agent, fleet } = await h.setUp(
      () => ({
        SendMessage: (params) => ({ result: { task: task(`T-${params.message.parts[0].text}`, 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } }),
        // Step a ends at once; step b's stream stays open (its end is journaled below, as a push would).
        SubscribeToTask: (params) => (params.id === 'T-a' ? { sse: [taskEvent(task('T-a', 'COMPLETED', { contextId: agent.calls('SendMessage').find((call) => call.params.message.parts[0].text === 'a')!.params.message.contextId }))], endAfter: 'hang' } : { sse: [], endAfter: 'hang' }),
      }),
      QUIET,
    );
    const { id } = await p.startWorkflow({
      workflowId: 'late-settle',
      steps: [
        { name: 'a', agent: agent.cardUrl, message: { text: 'a' } },
        { name: 'b', agent: agent.cardUrl, after: [], message: { text: 'b' } },
      ],
    });
    // a settled (the workflow waits for b): its entry taken, its duration observed once.
    await eventually(async () => (await durationsObserved(fleet)) === 1 || undefined, 'a settled', 10_000);
    expect(await p.journal.nextCheckAt(ref(id, 'a.1'))).toBeUndefined();
    await eventually(async () => (await recordOf(p, id, 'b.1'))?.state === 'WORKING' || undefined, 'b followed', 10_000);
    // b finishes (journaled; its settle not run yet), and a late follow job of a (a stale route) settles a again:
    // its decision completes the workflow and drops the workflow's entry '*'; a's own entry was gone already.
    await p.journal.applyStatus(ref(id, 'b.1'), { mode: 'outcome', state: 'COMPLETED' });
    await enqueueFollow(fleet.context.queues, ref(id, 'a.1'), { resubscription: 0, again: false, delayMs: 0, at: Date.now() });
    expect((await workflowSettled(p, id)).state).toBe('COMPLETED');
    await eventually(async () => (await p.journal.nextCheckAt(ref(id, '*'))) === undefined || undefined, "the workflow's entry dropped", 5_000);
    // Then b's own settle (a follow job for it): the one removal that takes b's entry observes b.
    await enqueueFollow(fleet.context.queues, ref(id, 'b.1'), { resubscription: 0, again: false, delayMs: 0, at: Date.now() });
    await eventually(async () => (await p.journal.nextCheckAt(ref(id, 'b.1'))) === undefined || undefined, "b's entry dropped", 5_000);
    await eventually(async () => (await durationsObserved(fleet)) >= 2 || undefined, 'b observed', 5_000);
    expect(await durationsObserved(fleet), 'durations observed for two delegations').toBe(2);
  }, 20_000);
});

/** Local follows running now (the fleet's gauge). */
async function metricLocalFollows(fleet: Fleet): Promise<number> {
  return (await fleet.metrics.localFollows.get()).values[0]?.value ?? 0;
}

describe('attack: the handed lease and the openings queue', () => {
  it('a follow that waits for its opening turn past the handed lease\'s end never streams while another holder has the lease', async () => {
    const LEASE_MS = 1_500;
    const prefix = h.newPrefix();
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    // Another agent whose 200 streams take every opening turn until the gate opens (no first event before it).
    const slow = await h.agentWith({
      SubscribeToTask: async () => {
        await gate;
        return { sse: [], endAfter: 'close' };
      },
    });
    const agent = await h.agentWith({
      SendMessage: (params) => ({ result: { task: task('T-MAIN', 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } }),
      SubscribeToTask: () => ({ sse: [], endAfter: 'hang' }),
    });
    const p = h.producer(prefix);
    const fleet = await h.fleetFor(prefix, { lockDurationMs: LEASE_MS, reconcileIntervalMs: 60_000, requestTimeoutMs: 15_000 });
    // 200 unfinished delegations of the slow agent, with their task ids (journal level: what earlier sends left).
    const busy: { ref: { workflowId: string; delegationId: string }; known: DelegationRecord }[] = [];
    for (let index = 0; index < 200; index++) {
      const workflowId = `busy-${index}`;
      // Created now: a row journaled in 1970 is past its attempt deadline, and a follow ends such an attempt at once.
      const now = String(Date.now());
      await p.journal.createWorkflow(workflowId, { state: 'RUNNING', definition: '{}', createdAt: now, updatedAt: now }, { ...intentRow(workflowId), agentCardUrl: slow.cardUrl, createdAt: now, updatedAt: now });
      const target = { workflowId, delegationId: 'main.1' };
      await p.journal.applyStatus(target, { mode: 'event', state: 'WORKING', taskId: `T-${index}`, agentCardUrl: slow.cardUrl });
      busy.push({ ref: target, known: (await p.journal.getDelegation(target))! });
    }
    // Between the token (a free opening turn) and the router's start, the 200 slow follows take every turn.
    const tokens = recordTokens(fleet, () => {
      for (const { ref: target, known } of busy) fleet.context.followHere!(target, { resubscription: 0, again: false, known });
    });
    const { id } = await p.delegate({ agent: agent.cardUrl, text: 'waits for a turn', idempotencyKey: 'waits' });
    await eventually(async () => slow.count('SubscribeToTask') === 200 || undefined, 'every opening turn taken', 10_000);
    await eventually(async () => (await recordOf(p, id))?.state === 'WORKING' || undefined, 'the answer journaled', 10_000);
    expect(tokens).toHaveLength(1);
    // Whatever the follow held while it waited has run out by now; another worker (a reconciler) follows the task.
    await eventually(async () => (await leaseHolder(p, id)) === null || undefined, 'no lease held', LEASE_MS + 3_000);
    const other = 'another-worker/reconcile-1';
    expect(await p.journal.takeFollow(ref(id), other, 30_000)).toBeGreaterThan(0);
    openGate();
    // The waiting follow gets its turn: it must find the lease held and open no second stream.
    await eventually(async () => agent.count('SubscribeToTask') > 0 || undefined, 'a stream opened', 3_000).catch(() => undefined);
    expect(agent.count('SubscribeToTask'), 'a second stream for a task another holder follows').toBe(0);
    expect(await leaseHolder(p, id)).toBe(other);
    expect(agent.count('SendMessage')).toBe(1);
  }, 30_000);
});
