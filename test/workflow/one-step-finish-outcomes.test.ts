/**
 * The one-step finish end to end (finishStep-5.lua: a one-step workflow's terminal status and its settle in one
 * script), for each terminal state the follow's stream can bring: COMPLETED (its artifact in the same script:
 * applyArtifactThenFinishStep), FAILED after work, and a task the agent cancels itself (the workflow FAILED: we did not
 * ask). With a real fleet, a real agent and a private redis-server, MONITOR counts the scripts: the one-step finish
 * runs once, and the two calls' settle at most once more, refused (a reconcile that read the rows just before the
 * finish tries its compare-and-set, which fails on the finished workflow, and reads again); the view, the compacted
 * record, the drained index and the workflow counted once are what the two calls leave.
 */
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { completesWith, fails, type Behaviour } from '@durable-a2a/testing';
import { scriptSha } from '../../packages/shared/src/journal/scripts.ts';
import { startDemoAgent } from '../harness/agent.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { startMonitor, testsOnCluster, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;

/** WORKING, then CANCELED by the agent itself. */
const cancelsItself: Behaviour = () => [{ state: 'WORKING' }, { state: 'CANCELED', text: 'the agent stopped' }];

const cases: { name: string; behaviour: Behaviour; attempt: string; workflow: string; text: string }[] = [
  { name: 'COMPLETED', behaviour: completesWith('booked', { delayMs: 200 }), attempt: 'COMPLETED', workflow: 'COMPLETED', text: 'booked' },
  { name: 'FAILED after work', behaviour: fails('no seats left'), attempt: 'FAILED', workflow: 'FAILED', text: 'no seats left' },
  { name: 'CANCELED by the agent', behaviour: cancelsItself, attempt: 'CANCELED', workflow: 'FAILED', text: 'the agent stopped' },
];

describe.skipIf(testsOnCluster())('the one-step finish, end to end', () => {
  for (const { name, behaviour, attempt, workflow, text } of cases) {
    it(`${name}: one finishStep, no settle applied after it; the workflow ${workflow}, compacted, out of the index; observed once`, async () => {
      const prefix = `one-step-${++counter}-${Date.now()}`;
      const shas = { finishStep: [scriptSha('finishStep'), scriptSha('applyArtifactThenFinishStep')], updateWorkflow: [scriptSha('updateWorkflow')] };
      const calls = { finishStep: 0, updateWorkflow: 0 };
      // Started while Redis is quiet (before the fleet): ioredis can take a command line arriving with MONITOR's +OK for a reply.
      const monitor = await startMonitor(redisServer().url);
      keep({ close: async () => monitor.disconnect() });
      monitor.on('monitor', (_time: string, args: string[]) => {
        if ((args[0] ?? '').toLowerCase() !== 'evalsha' || !(args[3] ?? '').startsWith(`${prefix}:`)) return;
        if (shas.finishStep.includes(args[1]!)) calls.finishStep++;
        if (shas.updateWorkflow.includes(args[1]!)) calls.updateWorkflow++;
      });
      const agent = await startDemoAgent({ behaviour });
      const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
      keep(producer, agent);
      const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
      keep(fleet);
      const { id, messageId } = await producer.delegate({ agent: agent.cardUrl, text: 'book it', idempotencyKey: `${prefix}-k` });
      const view = await producer.waitFor(id, { timeoutMs: 30_000 });
      expect(view.state).toBe(workflow);
      expect(view.steps[0]!.attempts.at(-1)!.state).toBe(attempt);
      expect(JSON.stringify(view.steps[0]!.attempts.at(-1))).toContain(text);
      expect(agent.sendMessageCount(messageId)).toBe(1);
      expect(await producer.journal.isCompacted(id)).toBe(true);
      // The script dropped both entries, and a check written afterwards by a reconcile that read the row before the
      // finish only moves an entry (ZADD XX): none comes back. That reconcile's own settle, decided from rows read
      // before the finish, is one compare-and-set the finished workflow refuses: the view stays as the finish left it.
      const finished = JSON.stringify(await producer.get(id));
      await eventually(async () => (await producer.journal.unfinishedCount()) === 0, 'index drained', 20_000);
      expect(calls.finishStep).toBe(1);
      expect(calls.updateWorkflow).toBeLessThanOrEqual(1);
      expect(JSON.stringify(await producer.get(id))).toBe(finished);
      expect(await producer.journal.isCompacted(id)).toBe(true);
      expect((await producer.get(id)).state).toBe(workflow);
      expect((await fleet.metrics.workflowsFinished.get()).values.reduce((sum, value) => sum + value.value, 0)).toBe(1);
    }, 60_000);
  }
});
