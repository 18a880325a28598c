/**
 * Our messageId in several tasks at the agent (it got our SendMessage more than once: a layer below us replayed it),
 * found by a search that is not the reconciler's. The reconciler's search row asks a person (AMBIGUOUS, every id
 * named) and adopts none; the same kind must end the same way on the other paths that search, or the work done twice
 * goes unseen and the step settles from whichever task the path happened to follow:
 * - a SendMessage the agent holds: the search while it is held sees T1 and T2; before, it stopped searching and the
 *   held send's later answer (T2) was adopted and COMPLETED;
 * - a streaming send the agent holds silent: the same;
 * - the read after a stream whose artifacts were a partial view (GetTask answers another task, ListTasks reads it):
 *   ListTasks shows our message in T1 and T2, or only in T2 (ours listed without its history); before, the streamed
 *   COMPLETED was journaled with a log line.
 * Real fleet, real Redis, a raw JSON-RPC agent (exact bytes). The property over the kind is in
 * packages/workers/test/search-twins-property.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, reconcileOutcomes, spawnSendWorker, spawnWorkerProcess, startTestFleet } from '../harness/fleet.ts';
import { AU, SU, ev, startScriptedAgent, task, taskEvent, type ScriptedHandlers } from '../harness/scripted-agent.ts';
import { finishedAttempt, holder, listing, personNaming, type Received } from '../harness/holders.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;

/** Starts `handlers` (given the message the agent received, once it has), a producer and a fleet; delegates once. */
async function scene(handlers: (received: () => Received | undefined, record: (params: any) => Received) => ScriptedHandlers, fleetOptions: Record<string, unknown> = {}) {
  const prefix = `several-${++counter}-${Date.now()}`;
  let received: Received | undefined;
  const record = (params: any) => (received ??= { messageId: params.message.messageId, contextId: params.message.contextId ?? 'C-agent' });
  const agent = await startScriptedAgent(handlers(() => received, record));
  const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
  keep(producer, agent);
  keep(await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 60_000, ...fleetOptions }));
  const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book it', idempotencyKey: `${prefix}-key` });
  return { agent, producer, id, messageId };
}

/** ListTasks shows T1 COMPLETED and T2 WORKING, both holding our message, once the agent has it (`onListed` then); GetTask reads either. */
const listsTwins = (received: () => Received | undefined, onListed: () => void): ScriptedHandlers => ({
  ListTasks: () => {
    const message = received();
    if (!message) return listing([]);
    onListed();
    return listing([holder('T1', 'COMPLETED', message), holder('T2', 'WORKING', message)]);
  },
  GetTask: (params) => ({ result: holder(String(params.id), 'COMPLETED', received()!) }),
});

/** The attempt once finished: AMBIGUOUS, its message naming T1 and T2. */
const personNamingTwins = (producer: Producer, id: string) => personNaming(producer, id, ['T1', 'T2']);

describe('our message in several tasks, found by a search other than the reconciler\'s: a person, every id named', () => {
  it('a held SendMessage: the search while it is held shows T1 and T2 holding our message; AMBIGUOUS naming both, nothing adopted, one SendMessage', async () => {
    let listed!: () => void;
    const searched = new Promise<void>((resolve) => (listed = resolve));
    const { agent, producer, id } = await scene(
      (received, record) => ({
        // Held until our side has searched, then answered with T2 (before the fix: adopted, the step COMPLETED from it).
        SendMessage: async (params) => {
          const message = record(params);
          await Promise.race([searched, new Promise((resolve) => setTimeout(resolve, 20_000))]);
          return { result: { task: holder('T2', 'COMPLETED', message) } };
        },
        ...listsTwins(received, listed),
        SubscribeToTask: (params) => ({ sse: [taskEvent(holder(String(params.id), 'COMPLETED', received()!))] }),
      }),
      { requestTimeoutMs: 500 },
    );
    const row = await personNamingTwins(producer, id);
    expect(row.taskId).toBeUndefined();
    expect(agent.count('SendMessage')).toBe(1);
    expect((await producer.get(id)).state).toBe('NEEDS_ATTENTION');
  }, 90_000);

  it('a streaming send held silent: the search from streamQuietMs on shows T1 and T2; AMBIGUOUS naming both, nothing adopted, one send', async () => {
    let listed!: () => void;
    const searched = new Promise<void>((resolve) => (listed = resolve));
    const { agent, producer, id } = await scene(
      (received, record) => ({
        // Silent until our side has searched, then T2's events (before the fix: T2 followed to COMPLETED).
        SendStreamingMessage: (params) => {
          const message = record(params);
          const ids = { taskId: 'T2', contextId: message.contextId };
          return { sse: [{ until: searched }, taskEvent(holder('T2', 'WORKING', message)), ev(AU('a-T2', false, true, "T2's booking", ids)), ev(SU('COMPLETED', ids))] };
        },
        ...listsTwins(received, listed),
      }),
      { streamingSends: true, streamQuietMs: 300, requestTimeoutMs: 500 },
    );
    const row = await personNamingTwins(producer, id);
    expect(row.taskId).toBeUndefined();
    expect(agent.count('SendStreamingMessage' as never) + agent.count('SendMessage')).toBe(1);
  }, 90_000);

  it('a worker SIGKILLed while the agent holds our SendMessage: the early search of the taking-over fleet shows T1 and T2; AMBIGUOUS at once, not after the send settles (requestTimeoutMs + 1 s: 2 minutes here)', async () => {
    const prefix = `several-dead-${++counter}-${Date.now()}`;
    let received: Received | undefined;
    const agent = await startScriptedAgent({
      SendMessage: (params) => ((received ??= { messageId: params.message.messageId, contextId: params.message.contextId ?? 'C-agent' }), { hang: true }),
      ListTasks: () => listing(received ? [holder('T1', 'COMPLETED', received), holder('T2', 'WORKING', received)] : []),
      GetTask: (params) => ({ result: holder(String(params.id), 'COMPLETED', received!) }),
    });
    const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    keep(producer, agent);
    // The killed worker would search only after 2 minutes; so would the taking-over fleet without the early search.
    // Production leases (30 s): the dead sender's send lease outlives its liveness key (3 s), so the fleet's dead-worker
    // sweep hands the record over while the send may still be in flight (docs/recovery.md).
    const worker = spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: prefix, DA2A_REQUEST_TIMEOUT_MS: '120000', DA2A_LOCK_DURATION_MS: '30000', DA2A_LIVENESS_TTL_MS: '3000' });
    await worker.ready;
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book it', idempotencyKey: `${prefix}-key` });
    await eventually(async () => agent.count('SendMessage') === 1, 'the agent holds our send', 30_000);
    await worker.kill('SIGKILL');
    keep(await startTestFleet({ redisUrl: redisServer().url, prefix, requestTimeoutMs: 120_000, lockDurationMs: 30_000, livenessTtlMs: 3_000 }));
    const row = await personNamingTwins(producer, id);
    expect(row.taskId).toBeUndefined();
    expect(agent.count('SendMessage')).toBe(1);
  }, 90_000);

  /** Our task T1 streams appended chunks (a partial view), GetTask answers another task, ListTasks shows `listed`. */
  const partialStream = (listed: (message: Received) => unknown[]) =>
    scene((received, record) => ({
      SendMessage: (params) => ({ result: { task: holder('T1', 'WORKING', record(params)) } }),
      SubscribeToTask: () => {
        const ids = { taskId: 'T1', contextId: received()!.contextId };
        const chunks = [AU('a-T1', false, false, "T1's ", ids), AU('a-T1', true, true, 'booking', ids), SU('COMPLETED', ids)];
        return { sse: [taskEvent(holder('T1', 'WORKING', received()!)), { waitMs: 30 }, chunks.map(ev).join(''), { waitMs: 30 }], endAfter: 'hang' };
      },
      // Not our task: the full read falls back on ListTasks (with artifacts).
      GetTask: () => ({ result: task('T9', 'COMPLETED', { contextId: 'C-other' }) }),
      ListTasks: () => listing(listed(received()!)),
    }));

  it('the read after a partial stream: ListTasks shows our message in T1 and T2; AMBIGUOUS naming both (before: the streamed COMPLETED, a log line)', async () => {
    const { agent, producer, id } = await partialStream((message) => [holder('T1', 'COMPLETED', message), holder('T2', 'COMPLETED', message)]);
    const row = await personNamingTwins(producer, id);
    expect(row.error?.message).toContain('COMPLETED');
    expect(row.taskId).toBe('T1');
    expect(agent.count('SendMessage')).toBe(1);
    expect(agent.count('ListTasks')).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it('the read after a partial stream: ListTasks shows our message only in T2 (ours listed without history); AMBIGUOUS naming both', async () => {
    const { producer, id } = await partialStream((message) => [holder('T1', 'COMPLETED', message, false), holder('T2', 'COMPLETED', message)]);
    const row = await personNamingTwins(producer, id);
  }, 90_000);

  it('the read after a partial stream: ListTasks shows only ours holding our message; COMPLETED from its full listing (the control)', async () => {
    const { producer, id } = await partialStream((message) => [holder('T1', 'COMPLETED', message)]);
    const row = await finishedAttempt(producer, id);
    expect(row.state).toBe('COMPLETED');
    const view = await producer.get(id);
    expect(JSON.stringify(view)).toContain("T1's booking");
  }, 90_000);

  it('the read by ListTasks after a stream that simply ended (GetTask answers another task) shows our message in T2, ours listed without history: AMBIGUOUS naming both (review20: before, a PROTOCOL_ERROR round, then the next stream\'s COMPLETED settled the step from T1)', async () => {
    const { agent, producer, id } = await scene((received, record) => ({
      SendMessage: (params) => ({ result: { task: holder('T1', 'WORKING', record(params)) } }),
      // First: T1 works, then the stream ends (a read follows). Any later subscription: T1 COMPLETED in full.
      SubscribeToTask: (_params, call) => ({ sse: [taskEvent(holder('T1', call.count === 1 ? 'WORKING' : 'COMPLETED', received()!))] }),
      // Not our task: the read falls back on ListTasks (with artifacts).
      GetTask: () => ({ result: task('T9', 'COMPLETED', { contextId: 'C-other' }) }),
      ListTasks: () => listing([holder('T1', 'COMPLETED', received()!, false), holder('T2', 'COMPLETED', received()!)]),
    }));
    await personNamingTwins(producer, id);
    expect(agent.count('SendMessage')).toBe(1);
  }, 90_000);

  it('a hostile agent lists 3000 tasks holding our message, each id 300 characters: AMBIGUOUS, its message bounded (the first ids, clipped, and the count; review20: before, every id in full, 900 KB)', async () => {
    const longId = (n: number) => `T${n}-${'x'.repeat(300)}`;
    const { producer, id } = await scene(
      (received, record) => ({
        SendMessage: (params) => (record(params), { hang: true }),
        ListTasks: () => listing(received() ? Array.from({ length: 3000 }, (_, n) => holder(longId(n), 'WORKING', received()!)) : []),
      }),
      { requestTimeoutMs: 500 },
    );
    const row = await finishedAttempt(producer, id);
    expect(row.state).toBe('AMBIGUOUS');
    expect(row.error?.message).toContain('3000 tasks');
    expect(row.error?.message).toContain('T0-xxx');
    expect(row.error!.message.length).toBeLessThan(4_000);
  }, 90_000);

  it('the dead sender alive after all: a peer\'s early search sees T1 and T2 while the paused sender wakes and its held answer binds T2 (WORKING); AMBIGUOUS naming both (review20: before, refused by the version the peer read, T2 followed, T1 unseen)', async () => {
    const prefix = `several-alive-${++counter}-${Date.now()}`;
    const timings = { lockDurationMs: 600_000, requestTimeoutMs: 60_000, livenessTtlMs: 3_000 };
    const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    const sender = spawnSendWorker(redisServer().url, prefix, timings);
    keep(producer, { close: async () => (sender.child.exitCode === null && sender.child.kill('SIGCONT'), await sender.kill()) });
    let ref = { workflowId: '', delegationId: 'main.1' };
    let received: Received | undefined;
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const agent = await startScriptedAgent({
      // Held until the peer searches; then T2, still working.
      SendMessage: async (params) => {
        received ??= { messageId: params.message.messageId, contextId: params.message.contextId ?? 'C-agent' };
        await answered;
        return { result: { task: holder('T2', 'WORKING', received) } };
      },
      // The peer's early search: the paused sender wakes, its answer is journaled (T2 bound), then the listing shows both.
      ListTasks: async () => {
        if (!received) return listing([]);
        sender.child.kill('SIGCONT');
        answer();
        await eventually(async () => (await producer.journal.getDelegation(ref))?.taskId === 'T2', 'the woken sender bound T2', 30_000);
        return listing([holder('T1', 'COMPLETED', received), holder('T2', 'WORKING', received)]);
      },
      GetTask: (params) => ({ result: holder(String(params.id), 'WORKING', received!) }),
      SubscribeToTask: (params) => ({ sse: [taskEvent(holder(String(params.id), 'WORKING', received!))], endAfter: 'hang' }),
    });
    keep(agent);
    await sender.ready;
    const peer = await startTestFleet({ redisUrl: redisServer().url, prefix, workerId: 'peer', reconcileIntervalMs: 60_000, ...timings });
    keep(peer);
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'book it', idempotencyKey: `${prefix}-key` });
    ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => agent.count('SendMessage') === 1, 'the agent holds our send', 30_000);
    sender.child.kill('SIGSTOP');
    // The peer's early search decided: its AMBIGUOUS written, or refused (VERSION_CONFLICT, before the fix).
    await eventually(async () => {
      const outcomes = await reconcileOutcomes(peer);
      return (outcomes['several-early'] ?? 0) + (outcomes.conflict ?? 0) > 0;
    }, 'the peer\'s early search decided', 60_000);
    const row = (await producer.journal.getDelegation(ref))!;
    expect(row.state).toBe('AMBIGUOUS');
    expect(row.error?.message).toContain('T1');
    expect(row.error?.message).toContain('T2');
    expect(agent.count('SendMessage')).toBe(1);
  }, 120_000);
});
