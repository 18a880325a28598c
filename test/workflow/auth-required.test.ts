/**
 * AUTH_REQUIRED (spec §7.6): the challenge is journaled; a per-agent auth
 * handler refreshes credentials and answers on the same task; without a
 * handler, the delegation resumes when the agent continues on its own.
 */
import { describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer } from '../harness/redis.ts';
import { useDemoAgent } from '../harness/agent.ts';
import { closeAfterEach } from '../harness/lifecycle.ts';
import { completesWith, requiresAuth } from '../harness/agent-behaviours.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const agent = useDemoAgent();
let producer: Producer;
let fleet: Fleet | undefined;
let counter = 0;
closeAfterEach(
  () => ({ fleet, producer }),
  () => void (fleet = undefined),
);

const completed = (id: string) =>
  eventually(async () => {
    const view = await producer.get(id);
    return view.state === 'COMPLETED' && view;
  }, 'completed');

describe('AUTH_REQUIRED', () => {
  it('a registered auth handler refreshes the token and answers on the same task; the next requests carry it', async () => {
    const prefix = `auth${++counter}`;
    producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    agent().setBehaviour(requiresAuth('sign in at https://idp.example/device', { then: completesWith('paid') }));
    let token = 'expired';
    const challenges: string[] = [];
    fleet = await startTestFleet({
      redisUrl: redisServer().url,
      prefix,
      credentials: () => async () => ({ authorization: `Bearer ${token}` }),
      authHandlers: {
        [agent().cardUrl]: async ({ challenge }) => {
          challenges.push(challenge);
          token = 'fresh-token';
          return { reply: 'signed in' };
        },
      },
    });
    const requestsBefore = agent().httpRequests.length;
    const { id } = await producer.delegate({ agent: agent().cardUrl, text: 'pay the invoice', idempotencyKey: 'auth-handler' });
    const view = await completed(id);
    const attempt = view.steps[0]!.attempts[0]!;
    expect(challenges).toEqual(['sign in at https://idp.example/device']);
    const reply = agent().receivedMessages.find((message) => message.messageId === attempt.replyMessageId)!;
    expect(reply).toMatchObject({ taskId: attempt.taskId, text: 'signed in' });
    expect(attempt.resultText).toBe('paid');
    const later = agent().httpRequests.slice(requestsBefore).filter((request) => request.method === 'POST');
    expect(later[0]!.authorization).toBe('Bearer expired');
    expect(later.at(-1)!.authorization).toBe('Bearer fresh-token');
  });

  it('without a handler, the delegation resumes when the agent continues on its own (credential out of band)', async () => {
    const prefix = `auth${++counter}`;
    producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    agent().setBehaviour(requiresAuth('approve in the banking app', { resumeAfterMs: 600, then: completesWith('approved') }));
    fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    const { id } = await producer.delegate({ agent: agent().cardUrl, text: 'transfer', idempotencyKey: 'auth-oob' });
    const asked = await eventually(async () => {
      const open = await producer.questions(id);
      return open.length > 0 && open;
    }, 'the auth challenge');
    expect(asked[0]).toMatchObject({ state: 'AUTH_REQUIRED', text: 'approve in the banking app' });
    const view = await completed(id);
    const attempt = view.steps[0]!.attempts[0]!;
    expect(attempt.resultText).toBe('approved');
    expect(attempt.replyMessageId).toBeUndefined();
    expect(agent().sendMessageCount(attempt.messageId)).toBe(1);
  });
});
