/**
 * Compensations run by a registered handler (no agent): the handler is given the step attempt it undoes,
 * found by kind, step and attempt (never by parsing an id), and the compensation's messageId as its
 * idempotency key; a step named like a compensation does not confuse it (RT1's kind).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import type { CompensationHandler, Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { useDemoAgent } from '../harness/agent.ts';
import { completesWith, rejects } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const booker = useDemoAgent({ behaviour: completesWith('booked') });
const refuser = useDemoAgent({ behaviour: rejects('no seats') });
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe('compensation handlers', () => {
  it('a failed workflow runs the handler once with the original attempt, then ends COMPENSATED', async () => {
    const calls: Parameters<CompensationHandler>[0][] = [];
    const refund: CompensationHandler = async (input) => {
      calls.push(input);
      return { evidence: { refunded: input.original.delegationId } };
    };
    const prefix = 'handler1';
    const producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    const fleet: Fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, compensationHandlers: { refund } });
    closers.push(() => producer.close(), () => fleet.close());

    const { id } = await producer.startWorkflow({
      workflowId: 'handler-trip',
      maxAttemptsPerStep: 1,
      steps: [
        { name: 'pay', agent: booker().cardUrl, message: { text: 'charge 10' }, compensation: { handler: 'refund', params: { currency: 'EUR' } } },
        { name: 'ship', agent: refuser().cardUrl, message: { text: 'ship it' } },
      ],
    });
    const view = await eventually(async () => {
      const current = await producer.get(id);
      return ['COMPENSATED', 'FAILED', 'NEEDS_ATTENTION'].includes(current.state) && current;
    }, 'the workflow settles', 30_000);

    expect(view.state).toBe('COMPENSATED');
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call!.original).toMatchObject({ step: 'pay', attempt: 1, kind: 'step', state: 'COMPLETED' });
    expect(call!.params).toEqual({ currency: 'EUR' });
    expect(call!.idempotencyKey).not.toBe(call!.original.messageId);
    const compensations = view.steps.find((step) => step.name === 'pay')!.compensations;
    expect(compensations).toHaveLength(1);
    expect(compensations[0]).toMatchObject({ state: 'COMPLETED', messageId: call!.idempotencyKey });
    expect(booker().sendMessageCount()).toBe(1);
  });
});
