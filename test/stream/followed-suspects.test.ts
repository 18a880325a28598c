/**
 * A followed delegation whose row keeps a suspect with no reconcile job (the push route kept T2, a task its refused
 * push showed holding our message, then crashed before its enqueue, or the enqueue failed). A follower reads only its
 * own task and its lease renewals keep the delegation's next check ahead, so the timer sweep never reconciles it:
 * before, T2 waited unread until the follow ended (hours for a long-lived stream) or a worker restarted (the start-up
 * sweep, de4a268). Now the renewal tick's script says the row keeps suspects, and a follow run starting on such a row
 * says so from the row it holds: either enqueues the reconciler's suspect read (GetTask T2, then AMBIGUOUS naming
 * both). The same fleet runs throughout, no worker restarted. Raw JSON-RPC agent, real Redis.
 * Timings: the lease is renewed every second (`lockDurationMs` 3 s); the reconcile interval is 10 minutes (the timer
 * sweep never finds the row due) and the stream idle timeout a minute (a hanging stream stays open).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { SU, startScriptedAgent, taskEvent, type SseWait } from '../harness/scripted-agent.ts';
import { holder, listing, personNaming, receivedOf, type Received } from '../harness/holders.ts';
import { getTaskCalls } from '../harness/push-scene.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;

/** Renewals every second; the timer sweep never finds a followed row due; a hanging stream is not dropped as idle. */
const TIMINGS = { lockDurationMs: 3_000, reconcileIntervalMs: 600_000, streamIdleTimeoutMs: 60_000 } as const;

interface Scene {
  /** When the suspect is journaled: while our send is answered (before any follow), or once the stream is open. */
  when: 'before-stream' | 'during-stream';
  /** What the stream carries after its snapshot: WORKING status updates or keep-alive comments, every 200 ms. */
  beat: 'status-updates' | 'keep-alives';
  /** Whether the stream goes on carrying beats after the suspect is journaled (else it hangs silent, still open). */
  afterSuspect: 'beats' | 'silence';
  /** What the row keeps: a suspect T2 pending, evidence lost (an id too long to keep), or nothing. */
  suspect: 'pending' | 'lost' | 'none';
}

/** A fleet and a producer on a fresh prefix, with `TIMINGS`. */
async function stack(): Promise<{ producer: Producer; fleet: Fleet; prefix: string }> {
  const prefix = `followed-suspects${++counter}`;
  const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
  const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, ...TIMINGS });
  keep(producer, fleet);
  return { producer, fleet, prefix };
}

/**
 * One delegation at an agent that answers T1 (holding our message), streams it (snapshot, then beats), and answers
 * GetTask T2 as another task holding our message; the suspect journaled as `scene` says, with no reconcile job.
 */
async function followWithSuspect(producer: Producer, scene: Scene) {
  let received: Received | undefined;
  // Assigned before the workflow starts (our send, and so its answer, comes after it).
  let noteIt: (() => Promise<void>) | undefined;
  let noted!: () => void;
  const suspectNoted = new Promise<void>((resolve) => (noted = resolve));
  const beat = (): string => (scene.beat === 'keep-alives' ? ': keep-alive\n\n' : `data: ${SU('WORKING', { taskId: 'T1', contextId: received!.contextId })}\n\n`);
  // About a minute of beats at most: the stream outlives every bound below.
  const beats = (count: number): (string | SseWait)[] => Array.from({ length: count }, (): (string | SseWait)[] => [{ waitMs: 200 }, beat()]).flat();
  const agent = await startScriptedAgent({
    SendMessage: async (params) => {
      received ??= receivedOf(params);
      // What the push route did before it crashed, while our send was answered: the suspect kept, no job.
      if (scene.when === 'before-stream') await noteIt!();
      return { result: { task: holder('T1', 'WORKING', received) } };
    },
    SubscribeToTask: () => {
      const before = scene.when === 'during-stream' ? [...beats(3), { until: suspectNoted }] : [];
      const after = scene.afterSuspect === 'beats' ? beats(300) : [];
      return { sse: [taskEvent(holder('T1', 'WORKING', received!)), ...before, ...after], endAfter: 'hang' };
    },
    GetTask: (params) => ({ result: holder(String(params.id), 'WORKING', received!) }),
    ListTasks: () => listing([holder('T1', 'WORKING', received!)]),
  });
  keep(agent);
  const ref = { workflowId: `followed-${++counter}-${Date.now()}`, delegationId: 'main.1' };
  noteIt = async () => {
    if (scene.suspect === 'pending') expect(await producer.journal.noteSuspect(ref, 'T2')).toBe('kept');
    if (scene.suspect === 'lost') expect(await producer.journal.noteSuspect(ref, 'T'.repeat(2_000))).toBe('too-long');
    noted();
  };
  await producer.startWorkflow({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'book it' } }] });
  // The stream is open under a follow lease and the row follows T1.
  await eventually(async () => agent.count('SubscribeToTask') >= 1 && (await producer.journal.leaseHolder(ref)) !== undefined && (await producer.journal.getDelegation(ref))?.taskId === 'T1', 'T1 followed on its stream', 30_000);
  if (scene.when === 'during-stream') await noteIt();
  return { agent, ref, workflowId: ref.workflowId };
}

describe('a followed delegation keeps a suspect the push route journaled without its job', () => {
  it('T1 followed on a live stream of WORKING status updates; T2 journaled with no job: GetTask T2 and AMBIGUOUS naming T1 and T2, no worker restarted (before: unread while the stream lived)', async () => {
    const { producer } = await stack();
    const { agent, workflowId } = await followWithSuspect(producer, { when: 'during-stream', beat: 'status-updates', afterSuspect: 'beats', suspect: 'pending' });
    const row = await personNaming(producer, workflowId, ['T1', 'T2'], 20_000);
    expect(row.taskId).toBe('T1');
    expect(getTaskCalls(agent, 'T2')).toBeGreaterThanOrEqual(1);
    expect(agent.count('SendMessage')).toBe(1);
  }, 60_000);

  it('a follow run starting on a row that keeps a suspect asks for its read from the row it holds (renewal ticks 200 s apart: none in the bound); no reconcile worker, the job is counted in the queue', async () => {
    const prefix = `followed-suspects${++counter}`;
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    // Sends and follows only: the suspect read job stays in the reconcile queue, to be found.
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, ...TIMINGS, lockDurationMs: 600_000, queues: ['send', 'follow'] });
    keep(producer, fleet);
    let received: Received | undefined;
    const ref = { workflowId: `${prefix}-w`, delegationId: 'main.1' };
    const agent = await startScriptedAgent({
      SendMessage: async (params) => {
        received ??= receivedOf(params);
        // Kept while our send is answered, no job: the follow the answer starts holds the row as the send read it.
        expect(await producer.journal.noteSuspect(ref, 'T2')).toBe('kept');
        return { result: { task: holder('T1', 'WORKING', received) } };
      },
      // The first stream ends after its snapshot: the next follow run starts on the row read again (its suspect in it).
      SubscribeToTask: (_params, call) => ({ sse: [taskEvent(holder('T1', 'WORKING', received!))], endAfter: call.count === 1 ? 'close' : 'hang' }),
      GetTask: (params) => ({ result: holder(String(params.id), 'WORKING', received!) }),
      ListTasks: () => listing([holder('T1', 'WORKING', received!)]),
    });
    keep(agent);
    await producer.startWorkflow({ workflowId: ref.workflowId, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'book it' } }] });
    const suspectReads = async () => (await fleet.context.queues.reconcile.getJobs(['waiting', 'prioritized', 'delayed'])).filter((job) => job.id?.includes('suspect')).length;
    // The second stream is open: a follow run started on the row read again after the first stream ended.
    await eventually(async () => agent.count('SubscribeToTask') >= 2, 'T1 followed again', 30_000);
    expect((await producer.journal.getDelegation(ref))?.suspects).toBeDefined();
    await eventually(async () => (await suspectReads()) >= 1, 'a suspect read job enqueued by the follow run', 20_000);
    expect(getTaskCalls(agent, 'T2')).toBe(0);
  }, 60_000);

  it('property: a suspect journaled before the stream or during it, with or without beats after it, the stream kept alive by keep-alives or status updates: always read (AMBIGUOUS naming both; evidence lost: AMBIGUOUS); no suspects: no GetTask at all over several renewals', async () => {
    const { producer } = await stack();
    const scenes = fc.record({
      when: fc.constantFrom<Scene['when']>('before-stream', 'during-stream'),
      beat: fc.constantFrom<Scene['beat']>('status-updates', 'keep-alives'),
      afterSuspect: fc.constantFrom<Scene['afterSuspect']>('beats', 'silence'),
      suspect: fc.constantFrom<Scene['suspect']>('pending', 'lost', 'none'),
    });
    await fc.assert(
      fc.asyncProperty(scenes, async (scene) => {
        const { agent, ref, workflowId } = await followWithSuspect(producer, scene);
        if (scene.suspect === 'pending') {
          const row = await personNaming(producer, workflowId, ['T1', 'T2'], 20_000);
          expect(row.taskId).toBe('T1');
          expect(getTaskCalls(agent, 'T2')).toBeGreaterThanOrEqual(1);
        } else if (scene.suspect === 'lost') {
          const row = await eventually(async () => {
            const current = await producer.journal.getDelegation(ref);
            return current?.state === 'AMBIGUOUS' && current;
          }, 'the lost evidence left to a person', 20_000);
          expect(row.taskId).toBe('T1');
        } else {
          // Several renewals of the lease (each moves the index entry's next check to a new jittered time), then nothing read.
          const checks = new Set<number | undefined>();
          await eventually(async () => checks.add(await producer.journal.nextCheckAt(ref)).size >= 4, 'three renewals more', 20_000);
          expect(agent.count('GetTask')).toBe(0);
          expect((await producer.journal.getDelegation(ref))?.state).toBe('WORKING');
          await producer.journal.removeFromIndex(ref);
        }
        await agent.close();
      }),
      {
        numRuns: 6,
        examples: [
          [{ when: 'during-stream', beat: 'keep-alives', afterSuspect: 'beats', suspect: 'pending' }],
          [{ when: 'during-stream', beat: 'status-updates', afterSuspect: 'silence', suspect: 'pending' }],
          [{ when: 'before-stream', beat: 'keep-alives', afterSuspect: 'silence', suspect: 'pending' }],
          [{ when: 'before-stream', beat: 'status-updates', afterSuspect: 'beats', suspect: 'lost' }],
          [{ when: 'during-stream', beat: 'status-updates', afterSuspect: 'beats', suspect: 'none' }],
          [{ when: 'during-stream', beat: 'keep-alives', afterSuspect: 'silence', suspect: 'none' }],
        ],
      },
    );
  }, 400_000);
});
