/**
 * AUTH_REQUIRED (spec §7.6): a registered per-agent auth handler may obtain
 * or refresh credentials (and store them in that agent's credentials
 * provider) and optionally answer the challenge on the same task. Whether or
 * not it replies, the delegation keeps being followed, because the agent may
 * resume on its own once the credential arrives out of band.
 */
import type { DelegationRecord, OutgoingMessage } from '@durable-a2a/shared';
import { enqueueReply, lazyChildLogger } from '@durable-a2a/shared';
import { randomUUID } from 'node:crypto';
import type { WorkerContext } from '../context.ts';

/** What an auth handler may answer: a reply to send on the same task, or nothing (credentials were updated). */
export type AuthHandlerResult = { reply?: string | OutgoingMessage['parts'] } | void;

/** A per-agent auth handler. Runs at most once per challenge (per status timestamp). */
export type AuthHandler = (input: { delegation: DelegationRecord; challenge: string }) => Promise<AuthHandlerResult>;

/** Runs the agent's auth handler for this challenge once, fleet-wide. Returns true if it ran. */
export async function handleAuthRequired(ctx: WorkerContext, record: DelegationRecord): Promise<boolean> {
  const handler = ctx.authHandlers.get(record.agentCardUrl);
  if (!handler || record.state !== 'AUTH_REQUIRED') return false;
  if (!(await ctx.journal.markOnce(record, `auth:${record.statusTimestampMs ?? record.version}`, ctx.workerId, 24 * 3600 * 1000))) return false;
  const challenge = record.question?.parts.map((part) => part.text ?? '').join('') ?? '';
  const log = lazyChildLogger(ctx.logger, { workflowId: record.workflowId, delegationId: record.delegationId, taskId: record.taskId });
  const result = await handler({ delegation: record, challenge });
  // New credentials: rebuild this agent's transports so every later call uses them.
  ctx.agents.forget(record.agentCardUrl);
  if (result && result.reply !== undefined) {
    const parts = typeof result.reply === 'string' ? [{ text: result.reply }] : result.reply;
    const reply = await ctx.journal.recordReply(record, randomUUID(), { parts });
    await enqueueReply(ctx.queues, record, reply.messageId);
    log.info('auth handler answered the challenge');
  } else {
    log.info('auth handler ran; waiting for the agent to resume');
  }
  return true;
}
