/**
 * The producer keeps the definition it validated as the parse of the text it journals (`keepParsedDefinition`):
 * `waitFor` builds the finished workflow's view from the published compacted record, whose definition text is the
 * journaled one, so the view's definition is that object and the schema does not run on it again. Real Redis, a
 * real agent and fleet.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { WorkflowDefinitionSchema } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const PREFIX = 'kept';
let producer: Producer;
let fleet: Fleet;
let agent: DemoAgentHandle;

beforeAll(async () => {
  agent = await startDemoAgent({ behaviour: completesWith('done') });
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
  producer = createProducer({ redis: redisServer().url, prefix: PREFIX, addressPolicy: { allowLoopback: true } });
});
afterAll(async () => {
  await producer?.close();
  await fleet?.close();
  await agent?.close();
});

describe('the definition a producer validated', () => {
  it('is the view of its finished delegation: waitFor parses no definition', async () => {
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'hello', idempotencyKey: 'kept-1', metadata: { order: 7 } });
    const parse = vi.spyOn(WorkflowDefinitionSchema, 'parse');
    try {
      const view = await producer.waitFor(id, { timeoutMs: 30_000 });
      expect(view.state).toBe('COMPLETED');
      expect(view.definition).toStrictEqual(WorkflowDefinitionSchema.parse({ workflowId: id, steps: [{ name: 'main', agent: agent.cardUrl, message: { text: 'hello', metadata: { order: 7 } } }], maxAttemptsPerStep: 1 }));
      // The one call above is this test's own.
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });
});
