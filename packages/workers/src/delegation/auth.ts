/**
 * AUTH_REQUIRED (spec §7.6): a registered per-agent auth handler may obtain
 * or refresh credentials (and store them in that agent's credentials
 * provider) and optionally answer the challenge on the same task. Whether or
 * not it replies, the delegation keeps being followed, because the agent may
 * resume on its own once the credential arrives out of band.
 */
import type { DelegationRecord, OutgoingMessage } from '@durable-a2a/shared';
import { JournalError, enqueueReply, lazyChildLogger } from '@durable-a2a/shared';
import { randomUUID } from 'node:crypto';
import type { WorkerContext } from '../context.ts';

/** What an auth handler may answer: a reply to send on the same task, or nothing (credentials were updated). */
export type AuthHandlerResult = { reply?: string | OutgoingMessage['parts'] } | void;

/**
 * A per-agent auth handler. Runs at most once per challenge (per status timestamp), and at most
 * `AUTH_HANDLER_ROUNDS` times per delegation attempt (P33: an agent that re-issues AUTH_REQUIRED for ever).
 */
export type AuthHandler = (input: { delegation: DelegationRecord; challenge: string }) => Promise<AuthHandlerResult>;

/** Auth handler runs per delegation attempt before a person decides (P33). */
export const AUTH_HANDLER_ROUNDS = 3;
const DAY_MS = 24 * 3600 * 1000;

/** What `handleAuthRequired` did: ran the handler, had nothing to do, or found its rounds used up (`challenge`: the agent's text). */
export type AuthHandling = { kind: 'ran' } | { kind: 'skipped' } | { kind: 'exhausted'; rounds: number; challenge: string };

/**
 * Runs the agent's auth handler for this challenge once, fleet-wide, within `AUTH_HANDLER_ROUNDS` per attempt.
 * Never writes the journal's state: `exhausted` is an observation for the executor (`auth-exhausted`).
 */
export async function handleAuthRequired(ctx: WorkerContext, record: DelegationRecord): Promise<AuthHandling> {
  const handler = ctx.authHandlers.get(record.agentCardUrl);
  if (!handler || record.state !== 'AUTH_REQUIRED') return { kind: 'skipped' };
  if (!(await ctx.journal.markOnce(record, `auth:${record.statusTimestampMs ?? record.version}`, ctx.workerId, DAY_MS))) return { kind: 'skipped' };
  const challenge = record.question?.parts.map((part) => part.text ?? '').join('') ?? '';
  const rounds = await ctx.journal.countRound(record, 'auth-handler', DAY_MS);
  if (rounds > AUTH_HANDLER_ROUNDS) return { kind: 'exhausted', rounds: rounds - 1, challenge: challenge.slice(0, 500) };
  const log = lazyChildLogger(ctx.logger, { workflowId: record.workflowId, delegationId: record.delegationId, taskId: record.taskId });
  const result = await handler({ delegation: record, challenge });
  // New credentials: rebuild this agent's transports so every later call uses them.
  ctx.agents.forget(record.agentCardUrl);
  if (result && result.reply !== undefined) {
    const parts = typeof result.reply === 'string' ? [{ text: result.reply }] : result.reply;
    const reply = await ctx.journal.recordReply(record, randomUUID(), { parts }, 'auth handler').catch((error: unknown) => {
      // The question closed meanwhile: answered, moved on, or its workflow is stopping (stepStopped.lua). Nothing to send.
      if (error instanceof JournalError && error.code === 'WRONG_STATE') return undefined;
      // The workflow's answer index is full (ANSWERS_PER_WORKFLOW_MAX): nothing journaled; a person cancels or resolves.
      if (error instanceof JournalError && error.code === 'ANSWER_LIMIT') {
        log.warn('auth handler answer not journaled: the workflow holds its most answers');
        return undefined;
      }
      throw error;
    });
    if (reply) {
      await enqueueReply(ctx.queues, record, reply.messageId);
      log.info('auth handler answered the challenge');
    } else {
      log.info('auth handler answered a question that closed meanwhile (answered, moved on, or the workflow is stopping): not sent');
    }
  } else {
    log.info('auth handler ran; waiting for the agent to resume');
  }
  return { kind: 'ran' };
}
