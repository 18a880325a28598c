/**
 * edges35: a push notification config id the agent assigns is an identifier of the wire like any other (task, context,
 * message, artifact ids): well-formed and at most `WIRE_ID_BYTES_MAX` UTF-8 bytes. The workers journal it (the row's
 * `pushConfigId`), send it back in Delete and log it with the delegation.
 *
 * FIXED FINDING (kind: an agent-supplied id stored and echoed without the wire's id rule). Input: an agent that drops the
 * inline config and answers Create with an id of its own: 200,000 characters, or one holding a lone surrogate.
 * Observed on main: `pushConfigState registered` with the 200,000-character id in the Redis row (and in the Delete
 * and its log line; the surrogate one journaled as U+FFFD, so the id we sent back was not the agent's). Expected: the
 * answer is unreadable (delivery received: the config may exist), the registration `unconfirmed` under our own id,
 * nothing over the bound in Redis; the delegation completes by polling. Fixed: `TaskPushNotificationConfigSchema.id`
 * (1.0 and 0.3) is `OptionalWireIdSchema`, which now bounds ids (packages/a2a/src/wire-id.ts). Property:
 * packages/a2a/test/wire-id-property.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WIRE_ID_BYTES_MAX } from '@durable-a2a/a2a';
import { useRedisServer } from '../harness/redis.ts';
import { eventually } from '../harness/fleet.ts';
import { completedView, delegatePushed, startPushStack, type PushStack } from '../harness/push-stack.ts';
import { startPushConfigAgent } from '../harness/push-config-agent.ts';

const redisServer = useRedisServer({ appendOnly: true });

describe('edges35: the push config id an agent assigns is held to the wire\'s id rule', () => {
  let env: PushStack;
  let n = 0;
  beforeAll(async () => {
    env = await startPushStack(redisServer().url, 'e35', true);
  });
  afterAll(async () => {
    await env?.close();
  });

  for (const [name, assignedId] of [['200,000 characters', 'c'.repeat(200_000)], ['a lone surrogate', 'cfg-\ud800']] as const) {
    it(`Create answers an id of ${name}: never journaled (unconfirmed under our id), the delegation completes`, async () => {
      const agent = await startPushConfigAgent({ keepsInline: false, assignedId });
      try {
        const { ref, record } = await delegatePushed(env, agent.cardUrl, `e35-${++n}`);
        const state = await eventually(async () => {
          const decided = (await record()).pushConfigState;
          return decided !== undefined && decided !== 'creating' && decided;
        }, 'push config registration decided');
        const row = await record();
        expect(state).toBe('unconfirmed');
        expect(row.pushConfigId).toMatch(/^da2a-[A-Za-z0-9_-]{22}$/);
        expect(Buffer.byteLength(row.pushConfigId ?? '', 'utf8')).toBeLessThanOrEqual(WIRE_ID_BYTES_MAX);
        await agent.complete('done');
        const view = await completedView(env, ref.workflowId);
        expect(view.steps[0]!.attempts[0]).toMatchObject({ state: 'COMPLETED', resultText: 'done' });
      } finally {
        await agent.close();
      }
    }, 60_000);
  }
});
