/**
 * A question's life while the agent's stream stays open (AUTH_REQUIRED, spec §7.6: the agent waits for a credential
 * given out of band and may resume on its own, so the follow keeps its stream). A healthy stream's lease renewals
 * keep the reconciler's next check ahead of it, and the reconciler was the only one to look at a question's expiry
 * and reminders: a step's `question.expiresAfterMs` never fired while the stream lived, nor did a reminder (the hole
 * the attempt deadline had, closed for it by follow-deadline). Now the follow keeps the question's moments as it
 * keeps the deadline: before it streams, and with a timer at the next moment while the stream is open.
 * The agent: task T1 (our message in its history) AUTH_REQUIRED for ever, its SubscribeToTask stream alive with
 * keep-alive comments or repeated status updates; no auth handler.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import type { QuestionPolicy } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { SU, agentMessage, liveStream, startScriptedAgent, task, taskEvent, type ScriptedAgentHandle } from '../harness/scripted-agent.ts';

const redisServer = useRedisServer();
let counter = 0;
const CHALLENGE = 'approve in the banking app';

interface Scene {
  /** Time between two events of the stream, ms. */
  everyMs: number;
  /** Keep-alive comments only after the snapshot (no status updates). */
  keepAliveOnly: boolean;
  /** The step's question policy. */
  question: QuestionPolicy;
}

const sum = async (metric: { get(): Promise<{ values: { value: number }[] }> }) => (await metric.get()).values.reduce((total, value) => total + value.value, 0);

describe('an AUTH_REQUIRED question while the agent keeps its stream open', () => {
  let agent: ScriptedAgentHandle | undefined;
  let producer: Producer | undefined;
  let fleet: Fleet | undefined;
  closeAfterEach(
    () => ({ fleet, agent, producer }),
    () => void (fleet = agent = producer = undefined),
  );

  async function askedWhileStreaming(scene: Scene) {
    const prefix = `auth-live${++counter}`;
    let history: unknown[] = [];
    let state: 'WORKING' | 'AUTH_REQUIRED' = 'WORKING';
    const challenge = agentMessage(CHALLENGE, { taskId: 'T1', contextId: 'C1', messageId: 'challenge-1' });
    const current = () => task('T1', state, { history, ...(state === 'AUTH_REQUIRED' ? { message: challenge } : {}) });
    const asked = `data: ${SU('AUTH_REQUIRED', { message: challenge })}\n\n`;
    const beat = scene.keepAliveOnly ? ': keep-alive\n\n' : asked;
    agent = await startScriptedAgent({
      // The task works, and asks for the credential once a stream follows it (GetTask shows the same).
      SendMessage: (params) => ((history = [params.message]), { result: { task: current() } }),
      GetTask: () => ({ result: current() }),
      SubscribeToTask: () => {
        const snapshot = taskEvent(current());
        state = 'AUTH_REQUIRED';
        return { sse: [snapshot, { waitMs: 50 }, asked, ...liveStream(scene.everyMs, beat)], endAfter: 'hang' };
      },
    });
    producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    // Every lease renewal moves the next check 1.5 to 4.5 s on: the index entry never comes due while the stream lives;
    // keep-alive comments hold it open as well as status updates (no quiet window within the test).
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, reconcileIntervalMs: 3_000, lockDurationMs: 2_000, streamQuietMs: 600_000, parkedPollMs: 600_000 });
    const { id } = await producer.startWorkflow({ workflowId: `${prefix}-w`, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'transfer' }, question: scene.question }] });
    const ref = { workflowId: id, delegationId: 'main.1' };
    await eventually(async () => agent!.count('SubscribeToTask') >= 1 && (await producer!.journal.getDelegation(ref))?.state === 'AUTH_REQUIRED', 'the challenge is followed on a stream', 30_000);
    return { id, ref, agent, producer, fleet };
  }

  it("expiresAfterMs 1,500, onExpiry 'fail', status updates every 200 ms: FAILED QUESTION_EXPIRED with the stream alive", async () => {
    const { ref, agent, producer, fleet } = await askedWhileStreaming({ everyMs: 200, keepAliveOnly: false, question: { expiresAfterMs: 1_500, onExpiry: 'fail' } });
    // Generous: the expiry plus half a minute (a loaded machine); on the old code it never expired while the stream lived.
    await eventually(async () => (await producer.journal.getDelegation(ref))?.state === 'FAILED', 'the question expired', 31_500);
    const row = (await producer.journal.getDelegation(ref))!;
    expect(row).toMatchObject({ state: 'FAILED', questionExpiry: 'fail', error: { code: 'QUESTION_EXPIRED' } });
    expect(row.questionExpired).toBe(row.questionKey);
    expect(row.questionExpiredAt! - row.questionAskedAt!).toBeGreaterThanOrEqual(1_500);
    expect(await sum(fleet.metrics.questionsExpired)).toBe(1);
    expect(agent.count('SendMessage')).toBe(1);
    // The stream of the finished row closes (its next event found the row finished): no lease, no renewals.
    await eventually(async () => (await producer.journal.followLeaseRemainingMs(ref)) === 0, 'the stream let go of the row', 30_000);
  }, 120_000);

  it('remindEveryMs 1,000, keep-alives every 100 ms: reminders while the stream is open, the question still open', async () => {
    const { id, ref, agent, producer, fleet } = await askedWhileStreaming({ everyMs: 100, keepAliveOnly: true, question: { remindEveryMs: 1_000 } });
    await eventually(async () => (await sum(fleet.metrics.questionReminders)) >= 2, 'two reminders', 31_000);
    expect((await producer.journal.getDelegation(ref))?.state).toBe('AUTH_REQUIRED');
    expect((await producer.questions(id)).map((question) => question.text)).toEqual([CHALLENGE]);
    expect(agent.count('SendMessage')).toBe(1);
  }, 120_000);

  it("property: any event spacing, keep-alives or status updates, any short expiry: the question expires ('fail')", async () => {
    const scenes = fc.record({
      everyMs: fc.integer({ min: 50, max: 600 }),
      keepAliveOnly: fc.boolean(),
      question: fc.record({ expiresAfterMs: fc.integer({ min: 500, max: 3_000 }), onExpiry: fc.constant('fail' as const) }),
    });
    await fc.assert(
      fc.asyncProperty(scenes, async (scene) => {
        try {
          const { ref, producer } = await askedWhileStreaming(scene);
          await eventually(async () => (await producer.journal.getDelegation(ref))?.state === 'FAILED', 'the question expired', scene.question.expiresAfterMs + 30_000);
          expect((await producer.journal.getDelegation(ref))?.error?.code).toBe('QUESTION_EXPIRED');
        } finally {
          await fleet?.close();
          await producer?.close();
          await agent?.close();
          fleet = producer = agent = undefined;
        }
      }),
      {
        numRuns: Number(process.env.AUTH_LIVE_RUNS ?? 3),
        seed: Number(process.env.AUTH_LIVE_SEED ?? 7_106),
        endOnFailure: true,
        examples: [[{ everyMs: 100, keepAliveOnly: true, question: { expiresAfterMs: 1_000, onExpiry: 'fail' } }]],
      },
    );
  }, 600_000);
});
