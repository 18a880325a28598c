/**
 * The new user's quick start (field report: workers started without DA2A_ALLOW_LOOPBACK while the API allowed
 * loopback): the producer accepted a delegation to an agent on 127.0.0.1, and the workers' own address policy
 * refused the address before anything was sent. That is the fleet's configuration, not the agent's verdict: the
 * workflow waits for a person (NEEDS_ATTENTION ADDRESS_REFUSED, the exact fix in its message), the step's budget
 * untouched; once the workers run with the switch, `resolve retry` sends it and the workflow completes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { useDemoAgent } from '../harness/agent.ts';
import { startTestFleet, workflowSettled } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const agent = useDemoAgent();
const running: { producer?: Producer; fleets: Fleet[] } = { fleets: [] };

afterEach(async () => {
  for (const fleet of running.fleets.splice(0)) await fleet.close();
  await running.producer?.close();
  running.producer = undefined;
});

describe('the workers refuse an agent address the producer allowed', () => {
  it('the workflow needs a person (ADDRESS_REFUSED, the fix named, nothing sent); retried once the workers allow it, it completes', async () => {
    const prefix = 'address-refused';
    running.producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    // The workers as a new user started them: no DA2A_ALLOW_LOOPBACK.
    running.fleets.push(await startTestFleet({ redisUrl: redisServer().url, prefix, addressPolicy: {} }));
    const sentBefore = agent().sendMessageCount();
    const requestsBefore = agent().httpRequests.length;
    const workflowId = 'quick-start';
    await running.producer.startWorkflow({ workflowId, maxAttemptsPerStep: 1, steps: [{ name: 'main', agent: agent().cardUrl, message: { text: 'hello' } }] });

    const waiting = await workflowSettled(running.producer, workflowId);
    expect(waiting.state).toBe('NEEDS_ATTENTION');
    expect(waiting.attention?.code).toBe('ADDRESS_REFUSED');
    expect(waiting.attention?.message).toContain(`the workers' address policy refuses ${agent().cardUrl}: set DA2A_ALLOW_LOOPBACK=true on the workers (addressPolicy.allowLoopback)`);
    expect(waiting.steps?.[0]?.attempts[0]).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'ADDRESS_REFUSED', delivery: 'not-sent' } });
    expect(agent().sendMessageCount() - sentBefore).toBe(0);
    expect(agent().httpRequests.length - requestsBefore).toBe(0);

    // The configuration fixed: workers that allow loopback, then the person's retry.
    await running.fleets.pop()!.close();
    running.fleets.push(await startTestFleet({ redisUrl: redisServer().url, prefix, addressPolicy: { allowLoopback: true } }));
    await running.producer.resolve(workflowId, 'retry');
    const done = await workflowSettled(running.producer, workflowId);
    expect(done.state).toBe('COMPLETED');
    expect(agent().sendMessageCount() - sentBefore).toBe(1);
  });
});
