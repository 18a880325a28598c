/**
 * review35: a push naming an id over the 1 KiB wire bound (`refusedOverLongId`) on a row not yet bound to its task
 * (the send may be in flight) whose body shows our message in a task: the same suspect the push route notes for the
 * same body without the long id (`suspectOf`: "a push for task … arrived before this delegation recorded its task"),
 * never a 400 that journals nothing (the suspect is what keeps giveBackMark-1.lua and noteUnreachable-1.lua from
 * sending our message again while the agent may hold it).
 */
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { delegatePushed, startPushStack } from '../harness/push-stack.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;

async function unboundScene() {
  const prefix = `unbound-long-id-${++counter}-${Date.now()}`;
  // No workers: the intent stays unbound (no task recorded), as while its SendMessage is in flight.
  const env = await startPushStack(redisServer().url, prefix, false);
  keep(env);
  const workflowId = `wf-${prefix}`;
  const { ref, record } = await delegatePushed(env, 'http://127.0.0.1:9/card', workflowId);
  const secret = (await env.producer.journal.pushToken(ref))!;
  const push = async (body: unknown) =>
    (await request(`${env.webhookUrl}/${workflowId}/main.1`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/a2a+json' } })).statusCode;
  return { push, record };
}

const holding = (taskId: string, messageId: string, artifactId: string) => ({
  task: {
    id: taskId,
    contextId: 'C-agent',
    status: { state: 'TASK_STATE_WORKING' },
    history: [{ role: 'ROLE_USER', messageId, parts: [{ text: 'go' }] }],
    artifacts: [{ artifactId, parts: [{ text: 'booked' }] }],
  },
});

describe('a push with an id over 1 KiB on a row not yet bound, showing our message in a task', () => {
  it('baseline: the same body with short ids is refused and its task noted as a suspect', async () => {
    const { push, record } = await unboundScene();
    const before = await record();
    expect(before.taskId).toBeUndefined();
    expect(await push(holding('T9', before.messageId, 'a1'))).toBe(403);
    expect((await record()).suspects ?? '').toContain('T9');
  }, 60_000);

  it('an artifact id of 1,025 characters: the task is still noted as a suspect (before: 400, nothing journaled)', async () => {
    const { push, record } = await unboundScene();
    const before = await record();
    expect(before.taskId).toBeUndefined();
    const status = await push(holding('T9', before.messageId, 'a'.repeat(1_025)));
    expect(status).not.toBe(400);
    expect((await record()).suspects ?? '').toContain('T9');
  }, 60_000);

  // `refusedOverLongId` took any quote of our messageId for "holds ours" (an agent's echo: evidence lost, a person asked);
  // `suspectOf` only a message of ours in the task's conversation (`historyHolds`). Failed before the fix (suspectsLost 1).
  it('an agent echo of our messageId in a task whose id is 1,025 characters is no evidence lost (as with a short id: no suspect)', async () => {
    const { push, record } = await unboundScene();
    const before = await record();
    const echo = (id: string) => ({ task: { id, contextId: 'C-agent', status: { state: 'TASK_STATE_WORKING' }, history: [{ role: 'ROLE_AGENT', messageId: before.messageId, parts: [{ text: 'echo' }] }] } });
    await push(echo('T8'));
    expect((await record()).suspects ?? '').not.toContain('T8');
    await push(echo('x'.repeat(1_025)));
    const after = await record();
    expect(after.suspectsLost ?? 0).toBe(0);
  }, 60_000);
});

