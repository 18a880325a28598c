/**
 * For tests of answers over the journal (answer-index*.test.ts): a producer on a private redis-server under `prefix`,
 * and the agent's side driven through the journal: its questions, and the reply's delivery as the reply queue's
 * worker journals it. Hooks are registered by `useAnswerJournal` (call it at module level).
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { IdempotencyConflictError, createProducer, type Producer } from '@durable-a2a/producer';
import { eventually } from './fleet.ts';
import type { DelegationRef, Journal, RedisClient } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from './redis.ts';

/** The producer, its journal and a plain client of the test's redis-server (each valid inside tests only). */
export interface AnswerJournal {
  producer: () => Producer;
  journal: () => Journal;
  redis: () => RedisClient;
}

/** Starts a redis-server and a producer with key prefix `prefix` for the file's tests; closed after them. */
export function useAnswerJournal(prefix: string): AnswerJournal {
  const redisServer = useRedisServer();
  const redis = useRedisClient(redisServer);
  let producer: Producer | undefined;
  beforeAll(async () => {
    const created = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix });
    producer = created;
    await eventually(() => created.journal.getWorkflow('none').then(() => true, () => false), 'the producer connected', 10_000);
  });
  afterAll(async () => {
    await producer?.close();
  });
  const started = (): Producer => {
    if (!producer) throw new Error('useAnswerJournal: the producer is only available inside tests (after beforeAll)');
    return producer;
  };
  return { producer: started, journal: () => started().journal, redis };
}

/** Status timestamps of the questions asked, one second apart (a later question is a later status). */
let stamp = Date.UTC(2026, 0, 1);

/** The agent asks question `questionKey` (its status message's id; `text`) on the delegation's task `T-<workflowId>`. */
export async function agentAsks(journal: Journal, ref: DelegationRef, questionKey: string, text = `question ${questionKey}`): Promise<void> {
  const held = (await journal.getDelegation(ref))!;
  const statusMessage = { messageId: questionKey, role: 'ROLE_AGENT' as const, parts: [{ text }] };
  stamp += 1_000;
  await journal.applyStatus(ref, { mode: 'event', state: 'INPUT_REQUIRED', taskId: `T-${ref.workflowId}`, statusTimestamp: new Date(stamp).toISOString(), held, statusMessage });
}

/** The status timestamp after the last question's (ISO 8601): a later status of the same task. */
export const nextStamp = (): string => new Date((stamp += 1_000)).toISOString();

/** The row's pending reply is delivered to the agent (what the reply queue's worker journals); nothing when none is pending. */
export async function delivered(journal: Journal, ref: DelegationRef): Promise<void> {
  const row = (await journal.getDelegation(ref))!;
  if (!row.replyMessageId || row.replyState === 'sent' || row.replyState === 'refused') return;
  expect(await journal.markReply(ref, 1, row.replyMessageId, 'sending', '', { token: 'tok', leaseMs: 60_000 })).toBe(true);
  expect(await journal.markReply(ref, 1, row.replyMessageId, 'sent', '', { token: 'tok' })).toBe(true);
}

/** Fills workflow `workflowId`'s answer index with filler answers until it holds `count` (what that many answers leave). */
export async function fillAnswerIndex(redis: RedisClient, journal: Journal, workflowId: string, count: number): Promise<void> {
  const key = journal.keys.answers(workflowId);
  const missing = count - (await redis.hlen(key));
  for (let first = 0; first < missing; first += 1_000) {
    await redis.hset(key, ...Array.from({ length: Math.min(1_000, missing - first) }, (_, n) => [`filler-${first + n}`, '0 main.1 q0']).flat());
  }
}

/**
 * A caller sends again one of the answers it was acknowledged (`given`: messageId → index in `contents`, picked by
 * `pick`), with its content (`same`) or the next one: the same is that answer (`created: false`), whatever is open now;
 * other content is IdempotencyConflictError. Nothing when none was given.
 */
export async function retryGiven(producer: Producer, workflowId: string, given: ReadonlyMap<string, number>, contents: readonly string[], retry: { pick: number; same: boolean }): Promise<void> {
  const ids = [...given.keys()];
  if (ids.length === 0) return;
  const id = ids[retry.pick % ids.length]!;
  const content = retry.same ? given.get(id)! : (given.get(id)! + 1) % contents.length;
  const reply = producer.reply(workflowId, contents[content]!, 'main', { messageId: id });
  if (retry.same) expect(await reply).toEqual({ messageId: id, created: false });
  else await expect(reply).rejects.toBeInstanceOf(IdempotencyConflictError);
}
