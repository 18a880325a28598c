/**
 * Attacks on a dead sender's send lease (docs/recovery.md "A dead sender's send lease, attacked"): a sender process
 * is paused (SIGSTOP: nothing in it runs, as in a long GC pause or a frozen VM) with its SendMessage open at an agent
 * the test drives step by step (`gated-agent.ts`); a peer presumes it dead (its liveness key runs out) and its
 * reconciler searches the agent. Then the sender comes back. Whatever the order, the agent gets one SendMessage per
 * messageId and the journal ends with the one task, finished, never regressed.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { enqueueReconcile, type DelegationRecord } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { eventually, reconcileOutcomes, spawnSendWorker, startTestFleet, type WorkerProcess } from '../harness/fleet.ts';
import { startTaskAgent, type TaskAgentHandle } from '../harness/task-agent.ts';
import { startGatedAgent, type GatedAgentHandle, type GatedAgentOptions } from '../harness/gated-agent.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let counter = 0;

/** Lets a paused process run again (a stopped process ignores SIGKILL until continued on some systems) and kills it. */
async function resumeAndKill(process: WorkerProcess | undefined): Promise<void> {
  if (process && process.child.exitCode === null) process.child.kill('SIGCONT');
  await process?.kill();
}

/** Leases long enough that nothing in a test runs out at its TTL; a request that outlives every pause of the test. */
const TIMINGS = { lockDurationMs: 600_000, requestTimeoutMs: 60_000, livenessTtlMs: 3_000 };

describe('a paused sender comes back after its peer acted on its send', () => {
  let agent: GatedAgentHandle | undefined;
  let producer: Producer | undefined;
  let peer: Fleet | undefined;
  let sender: WorkerProcess | undefined;
  closeAfterEach(
    () => ({ fleet: { close: async () => (await peer?.close(), await resumeAndKill(sender)) }, agent, producer }),
    () => void (peer = sender = producer = agent = undefined),
  );

  /** A sender process (send queue only) and a peer fleet; one delegation whose SendMessage reached the agent; the sender paused and presumed dead (`pause`, default true). */
  async function pausedSend(agentOptions: GatedAgentOptions, pause = true) {
    const prefix = `dead-sender${++counter}`;
    agent = await startGatedAgent(agentOptions);
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    sender = spawnSendWorker(redisServer().url, prefix, TIMINGS);
    await sender.ready;
    peer = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'peer', ...TIMINGS });
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'paused' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => agent!.count('SendMessage') === 1, 'the SendMessage reached the agent');
    if (pause) {
      sender.child.kill('SIGSTOP');
      await eventually(async () => ((await peer!.metrics.deadWorkers.get()).values[0]?.value ?? 0) === 1, 'the paused sender presumed dead', 30_000);
    }
    const record = async (): Promise<DelegationRecord> => (await producer!.journal.getDelegation(ref))!;
    const sends = () => agent!.calls('SendMessage').filter((call) => call.params?.message?.messageId === messageId).length;
    /** Resumes the sender, releases its SendMessage's answer and waits until its send job has applied it. */
    const resumeWithAnswer = async () => {
      sender!.child.kill('SIGCONT');
      agent!.releaseAnswers();
      await eventually(async () => agent!.answered() === 1, 'the held answer written');
      await eventually(async () => ((await peer!.context.queues.send.getJobCounts('active')).active ?? 0) === 0, 'the sender\'s send job ended', 30_000);
    };
    return { id, ref, prefix, record, sends, resumeWithAnswer };
  }

  it('adopted while the task works, then the sender\'s late answer: one SendMessage, the task kept, finished once', async () => {
    const scene = await pausedSend({ createOnReceive: true });
    await eventually(async () => (await scene.record()).taskId === 'T-1', 'the peer adopted the task it found by our messageId', 30_000);
    await eventually(async () => (await scene.record()).state === 'WORKING', 'the peer follows the adopted task', 30_000);
    await scene.resumeWithAnswer();
    const afterAnswer = await scene.record();
    expect(afterAnswer.taskId).toBe('T-1');
    // The late answer carries the task as it was created (SUBMITTED): it must not take the row back.
    expect(afterAnswer.state).toBe('WORKING');
    agent!.completeTasks();
    await eventually(async () => (await producer!.get(scene.id)).state === 'COMPLETED', 'completed', 60_000);
    const finished = await scene.record();
    expect({ state: finished.state, taskId: finished.taskId, sendCount: finished.sendCount, resendCount: finished.resendCount }).toEqual({ state: 'COMPLETED', taskId: 'T-1', sendCount: 1, resendCount: 0 });
    expect(scene.sends()).toBe(1);
    expect(agent!.created()).toBe(1);
  }, 150_000);

  it('adopted and finished, then the sender\'s late answer: one SendMessage, the finished row unchanged', async () => {
    const scene = await pausedSend({ createOnReceive: true });
    await eventually(async () => (await scene.record()).taskId === 'T-1', 'the peer adopted the task it found by our messageId', 30_000);
    agent!.completeTasks();
    await eventually(async () => (await producer!.get(scene.id)).state === 'COMPLETED', 'completed', 60_000);
    const finished = await scene.record();
    await scene.resumeWithAnswer();
    const after = await scene.record();
    expect(after.state).toBe('COMPLETED');
    expect(after.version).toBe(finished.version);
    expect(scene.sends()).toBe(1);
  }, 150_000);

  // Not paused: the sender lives, but its liveness key is gone (deleted here, as by a Redis restart that lost it, until
  // its next beat sets it again), and a reconcile of the delegation runs in that gap: the peer takes the sender for
  // dead, its search finds the task, it ends the live sender's send lease and adopts the task. The sender's answer
  // then comes to an adopted row: nothing is sent twice, nothing taken back.
  it('a live sender whose liveness key is lost: the found task adopted, its answer later changes nothing; one SendMessage', async () => {
    const scene = await pausedSend({ createOnReceive: true }, false);
    const holder = (await producer!.journal.leaseHolder(scene.ref))!;
    const livenessKey = `${scene.prefix}:{fleet}:live:${holder.slice(0, holder.indexOf('/'))}`;
    const adoptedEarly = async () => (await reconcileOutcomes(peer!))['adopted-early'] ?? 0;
    // Bounded: each round deletes the key and asks for one reconcile; the sender's beat (every second) sets it again.
    for (let round = 0; round < 200 && (await adoptedEarly()) === 0; round++) {
      await redis().del(livenessKey);
      await enqueueReconcile(peer!.context.queues, scene.ref, { dueAt: Date.now(), now: Date.now() });
      const idle = async () => {
        const counts = await peer!.context.queues.reconcile.getJobCounts('wait', 'active');
        return counts.wait === 0 && counts.active === 0;
      };
      await eventually(idle, 'the reconcile ran', 10_000, 20);
    }
    expect(await adoptedEarly()).toBe(1);
    await eventually(async () => (await scene.record()).taskId === 'T-1', 'the task adopted', 30_000);
    await scene.resumeWithAnswer();
    expect((await scene.record()).taskId).toBe('T-1');
    agent!.completeTasks();
    await eventually(async () => (await producer!.get(scene.id)).state === 'COMPLETED', 'completed', 60_000);
    expect(scene.sends()).toBe(1);
    expect(agent!.created()).toBe(1);
  }, 150_000);

  it('the search misses, the sender comes back, the agent creates the task: one SendMessage, the sender\'s answer applied', async () => {
    const scene = await pausedSend({});
    // The peer's reconciler looked (ListTasks) while the sender was paused, found nothing, and sent nothing.
    await eventually(async () => agent!.count('ListTasks') >= 1, 'the peer searched for the message', 30_000);
    expect((await scene.record()).state).toBe('INTENT');
    await scene.resumeWithAnswer();
    await eventually(async () => (await scene.record()).taskId === 'T-1', 'the sender journaled its task', 30_000);
    agent!.completeTasks();
    await eventually(async () => (await producer!.get(scene.id)).state === 'COMPLETED', 'completed', 60_000);
    expect(scene.sends()).toBe(1);
    expect(agent!.created()).toBe(1);
  }, 150_000);
});

/**
 * The property over random interleavings: a paused sender, two peers that both reconcile (they race on the same dead
 * holder), and in a random order: the agent creates the task, the sender wakes (SIGCONT) or is killed (SIGKILL), the
 * agent releases its answer, a peer's search runs. The send lease (30 s) outlives the agent's delay, as the promise
 * asks. Whatever the order: one SendMessage, one task, the record COMPLETED on it.
 */
describe('property: a paused sender, two racing peers, any order of creation, wake-up, answer and search', () => {
  const LEASE = { lockDurationMs: 30_000, requestTimeoutMs: 10_000, livenessTtlMs: 3_000 };
  type Action = 'create' | 'wake' | 'release' | 'search';
  const processes: WorkerProcess[] = [];
  const fleets: Fleet[] = [];

  async function run(createOnReceive: boolean, actions: readonly Action[], wakeBy: 'SIGCONT' | 'SIGKILL'): Promise<void> {
    const prefix = `dead-sender-fuzz${++counter}`;
    const agent = await startGatedAgent({ createOnReceive });
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    try {
      const sender = spawnSendWorker(redisServer().url, prefix, LEASE);
      processes.push(sender);
      await sender.ready;
      for (const workerId of ['peer-a', 'peer-b']) fleets.push(await startTestFleet({ redisUrl: redisServer().url, prefix, workerId, ...LEASE }));
      const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'fuzz' });
      const ref = { workflowId: id, delegationId: 'main.1' };
      await eventually(async () => agent.count('SendMessage') === 1, 'the SendMessage reached the agent');
      sender.child.kill('SIGSTOP');
      const deaths = async () => (await Promise.all(fleets.map(async (fleet) => (await fleet.metrics.deadWorkers.get()).values[0]?.value ?? 0))).reduce((a, b) => a + b, 0);
      await eventually(async () => (await deaths()) === 1, 'the paused sender presumed dead', 30_000);
      let awake = false;
      for (const action of actions) {
        if (action === 'create') agent.createTasks();
        if (action === 'release') agent.releaseAnswers();
        if (action === 'wake') {
          sender.child.kill(wakeBy);
          awake = wakeBy === 'SIGCONT';
        }
        if (action === 'search' && !awake) {
          // A peer's next search (at the sweep, the send's settle time, the lease's end), unless the task is bound.
          const searches = agent.count('ListTasks');
          await eventually(async () => agent.count('ListTasks') > searches || (await producer.journal.getDelegation(ref))?.taskId !== undefined, 'a peer searched again', 60_000);
        }
      }
      agent.createTasks();
      agent.releaseAnswers();
      if (!awake && wakeBy === 'SIGCONT') sender.child.kill('SIGCONT');
      await eventually(async () => (await producer.journal.getDelegation(ref))?.taskId !== undefined, 'the task bound', 60_000);
      agent.completeTasks();
      await eventually(async () => (await producer.get(id)).state === 'COMPLETED', 'completed', 60_000);
      const record = (await producer.journal.getDelegation(ref))!;
      expect({ state: record.state, taskId: record.taskId, resendCount: record.resendCount }).toEqual({ state: 'COMPLETED', taskId: 'T-1', resendCount: 0 });
      expect(agent.calls('SendMessage').filter((call) => call.params?.message?.messageId === messageId).length).toBe(1);
      expect(agent.created()).toBe(1);
    } finally {
      for (const process of processes.splice(0)) await resumeAndKill(process);
      for (const fleet of fleets.splice(0)) await fleet.close();
      await producer.close();
      await agent.close();
    }
  }

  it('one SendMessage, one task, COMPLETED, in every order', async () => {
    const actions = fc.shuffledSubarray<Action>(['create', 'wake', 'release', 'search', 'search'], { minLength: 1 });
    await fc.assert(
      fc.asyncProperty(fc.boolean(), actions, fc.constantFrom<'SIGCONT' | 'SIGKILL'>('SIGCONT', 'SIGKILL'), run),
      { numRuns: Number(process.env.DEAD_SENDER_RUNS ?? 5), seed: Number(process.env.DEAD_SENDER_SEED ?? 7_404), endOnFailure: true },
    );
  }, 900_000);
});

/**
 * A graceful close (a deploy, a rolling restart) while an agent holds a SendMessage: the agent creates its task only
 * when it answers, 25 s after the request, whatever became of the connection. The send waited past
 * `requestTimeoutMs` and moved out of its job (the held sends' pool); the close stops it. The request may still be
 * open at the agent: the same messageId must not go again before the agent could have created its task.
 */
describe('a sender closed gracefully while the agent holds its SendMessage', () => {
  let agent: TaskAgentHandle | GatedAgentHandle | undefined;
  let producer: Producer | undefined;
  let peer: Fleet | undefined;
  let sender: Fleet | undefined;
  closeAfterEach(
    () => ({ fleet: { close: async () => (await sender?.close(), await peer?.close()) }, agent, producer }),
    () => void (peer = sender = producer = agent = undefined),
  );

  it('one SendMessage: the held send\'s lease outlives the close, the task is adopted', async () => {
    const prefix = `closed-sender${++counter}`;
    agent = await startTaskAgent({ sendMs: 25_000, taskMs: 200 });
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const timings = { lockDurationMs: 30_000, requestTimeoutMs: 3_000, livenessTtlMs: 3_000 };
    sender = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'sender', queues: ['send'], ...timings });
    const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book', idempotencyKey: 'closed' });
    await eventually(async () => sender!.context.heldSends.heldBy(agent!.cardUrl) === 1, 'the held send moved out of its job', 30_000);
    peer = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'peer', ...timings });
    // What the close does first to a held send (fleet.ts closeFleet): the pool stops it. Called here on its own so the
    // lease's fate does not depend on whether a release races the close's QUIT (before the fix it lost that race in
    // most runs, and the lease survived by accident).
    await sender.context.heldSends.drain();
    await sender.close();
    sender = undefined;
    // The stopped request may still be open at the agent: its send lease stays, to its TTL or until a search finds the task.
    const holderAfterClose = await producer.journal.leaseHolder({ workflowId: id, delegationId: 'main.1' });
    await eventually(async () => (await producer!.get(id)).state === 'COMPLETED', 'taken over and completed', 120_000);
    expect(agent.calls('SendMessage').filter((call) => call.params?.message?.messageId === messageId).length).toBe(1);
    expect(holderAfterClose).toMatch(/^sender\/send\//);
  }, 180_000);

  it('a streaming send whose headers the agent holds: the close leaves its send lease, the task is adopted; one send', async () => {
    const prefix = `closed-streaming-sender${++counter}`;
    const gated = await startGatedAgent({});
    agent = gated;
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const timings = { lockDurationMs: 30_000, requestTimeoutMs: 3_000, livenessTtlMs: 3_000 };
    sender = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'sender', queues: ['send'], streamingSends: true, ...timings });
    const { id, messageId } = await producer.delegate({ agent: gated.cardUrl, text: 'book', idempotencyKey: 'closed-streaming' });
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => gated.count('SendStreamingMessage') === 1, 'the streaming send reached the agent');
    peer = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'peer', ...timings });
    await sender.close();
    sender = undefined;
    const holderAfterClose = await producer.journal.leaseHolder(ref);
    // After the close the peer looks (at the send's settle time) before the agent created the task: nothing found, and
    // nothing sent (the sender's lease is left); before the fix the lease was gone and this search's miss resent.
    const decisions = async () => {
      const outcomes = await reconcileOutcomes(peer!);
      return (outcomes['send-held'] ?? 0) + (outcomes.resend ?? 0);
    };
    const [decidedBefore, searchesBefore] = [await decisions(), gated.count('ListTasks')];
    const decided = async () => gated.count('ListTasks') > searchesBefore && (await decisions()) > decidedBefore;
    await eventually(decided, 'the peer searched and decided', 30_000);
    gated.createTasks();
    gated.releaseAnswers();
    // Every task finishes, a second one too if the same message was sent again: the count below tells.
    await eventually(async () => (gated.completeTasks(), (await producer!.get(id)).state === 'COMPLETED'), 'taken over and completed', 120_000);
    const sends = [...gated.calls('SendMessage'), ...gated.calls('SendStreamingMessage')].filter((call) => call.params?.message?.messageId === messageId);
    expect(sends.length).toBe(1);
    expect(holderAfterClose).toMatch(/^sender\/send\//);
  }, 180_000);
});

/**
 * A lease holder is `<workerId>/<run>`, read up to its first '/': the sweep tells a dead sender's send lease (left to
 * its TTL) from a follow lease (ended at once) by what follows it, and the reconciler reads the holder's liveness key
 * by what precedes it. A worker id with a '/' (`pod/a`) made `pod/a/send/<job>` read as worker `pod`'s follow lease
 * `a/send/<job>`: ended at the death, the send resent while its request could still be open.
 */
describe('a worker id is one segment of a lease holder', () => {
  it('startFleet refuses a worker id with a \'/\' (or empty) before it connects', async () => {
    for (const workerId of ['pod/a', '']) {
      await expect(startTestFleet({ redisUrl: redisServer().url, prefix: `worker-id${++counter}`, workerId })).rejects.toThrow(TypeError);
    }
  });
});
