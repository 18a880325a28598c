/**
 * The attempt deadline of a followed task: the agent took our message (task T1, our message in its history) and keeps
 * it WORKING for ever, its SubscribeToTask stream alive (status updates, or keep-alive comments only). While a stream
 * is healthy its lease renewals keep moving the delegation's next check a reconcile interval ahead, so the timer
 * sweep never reconciles it; the follow run itself ends it at its deadline: AMBIGUOUS `DEADLINE_EXCEEDED` for a
 * person (the agent holds our task: the work may have happened), with the same fleet running, no worker restarted.
 * Timings: the lease is renewed every 667 ms (`lockDurationMs` 2 s) and each renewal moves the next check 1.5 to 4.5 s
 * on (`reconcileIntervalMs` 3 s): the index entry never comes due while the stream lives.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { SU, liveStream, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
let counter = 0;

interface Scene {
  /** Time between two events of the stream, ms. */
  everyMs: number;
  /** Keep-alive comments only after the snapshot (no status updates). */
  keepAliveOnly: boolean;
  /** The step's `attemptDeadlineMs`. */
  deadlineMs: number;
  /** The task's state for ever. */
  state: 'WORKING' | 'SUBMITTED';
}

describe('a followed task the agent keeps working for ever, its stream alive', () => {
  let agent: ScriptedAgentHandle | undefined;
  let producer: Producer | undefined;
  let fleet: Fleet | undefined;
  closeAfterEach(
    () => ({ fleet, agent, producer }),
    () => void (fleet = agent = producer = undefined),
  );

  async function followPastDeadline(scene: Scene) {
    const prefix = `follow-deadline${++counter}`;
    let history: unknown[] = [];
    const current = () => task('T1', scene.state, { history });
    const beat = scene.keepAliveOnly ? ': keep-alive\n\n' : `data: ${SU(scene.state)}\n\n`;
    agent = await startScriptedAgent({
      SendMessage: (params) => ((history = [params.message]), { result: { task: current() } }),
      GetTask: () => ({ result: current() }),
      SubscribeToTask: () => ({ sse: [taskEvent(current()), ...liveStream(scene.everyMs, beat)], endAfter: 'hang' }),
    });
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 3_000, lockDurationMs: 2_000, streamQuietMs: 10_000 });
    const { id } = await producer.startWorkflow({ workflowId: `${prefix}-w`, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'work on it' }, attemptDeadlineMs: scene.deadlineMs }] });
    const ref = { workflowId: id, delegationId: 'main.1' };
    // The stream is open and the row follows the agent's task.
    await eventually(async () => agent!.count('SubscribeToTask') >= 1 && (await producer!.journal.getDelegation(ref))?.taskId === 'T1', 'the task is followed', 30_000);
    // Generous: the deadline plus half a minute (a loaded machine); on the old code it never ended while the stream lived.
    await eventually(async () => (await producer!.journal.getDelegation(ref))?.state === 'AMBIGUOUS', 'the attempt ended at its deadline', scene.deadlineMs + 30_000);
    const record = (await producer.journal.getDelegation(ref))!;
    return { record, subscriptions: agent.count('SubscribeToTask'), sends: agent.count('SendMessage') };
  }

  it('WORKING status updates every 200 ms, deadline 3 s: AMBIGUOUS DEADLINE_EXCEEDED, the agent got one message', async () => {
    const { record, sends } = await followPastDeadline({ everyMs: 200, keepAliveOnly: false, deadlineMs: 3_000, state: 'WORKING' });
    expect({ state: record.state, code: record.error?.code, taskId: record.taskId, delivery: record.error?.delivery }).toEqual({ state: 'AMBIGUOUS', code: 'DEADLINE_EXCEEDED', taskId: 'T1', delivery: 'received' });
    expect(sends).toBe(1);
  }, 120_000);

  it('property: any event spacing, keep-alives or status updates, SUBMITTED or WORKING, any short deadline: AMBIGUOUS DEADLINE_EXCEEDED', async () => {
    const scenes = fc.record({
      everyMs: fc.integer({ min: 50, max: 600 }),
      keepAliveOnly: fc.boolean(),
      deadlineMs: fc.integer({ min: 1_000, max: 4_000 }),
      state: fc.constantFrom<'WORKING' | 'SUBMITTED'>('WORKING', 'SUBMITTED'),
    });
    await fc.assert(
      fc.asyncProperty(scenes, async (scene) => {
        try {
          const { record } = await followPastDeadline(scene);
          expect({ state: record.state, code: record.error?.code }).toEqual({ state: 'AMBIGUOUS', code: 'DEADLINE_EXCEEDED' });
        } finally {
          await fleet?.close();
          await producer?.close();
          await agent?.close();
          fleet = producer = agent = undefined;
        }
      }),
      {
        numRuns: Number(process.env.FOLLOW_DEADLINE_RUNS ?? 3),
        seed: Number(process.env.FOLLOW_DEADLINE_SEED ?? 3_535),
        endOnFailure: true,
        examples: [[{ everyMs: 100, keepAliveOnly: true, deadlineMs: 2_000, state: 'WORKING' }]],
      },
    );
  }, 600_000);
});
