/**
 * Who calls the front door and which tasks are theirs. A caller is identified by its API token (the
 * principal); the token itself is never stored, only a digest. A front task's id is derived from the
 * principal and the caller's messageId, so the same SendMessage sent twice by the same caller names the
 * same journaled workflow (the producer's idempotency key), and a task id tells whose it is. A task of a tenant other
 * than `default` is stored, and shown, as `<tenant>~a2a-…` (tenant.ts); these functions take the part after `~`.
 */
import { createHash } from 'node:crypto';
import type { User } from '@a2a-js/sdk/server';
import { OPERATOR_SCOPE, type ProducerScope } from '../../tenancy.ts';

/** Hex characters of the principal digest in a task id (64 bits: collisions between tokens are not a concern). */
const PRINCIPAL_HEX = 16;
/** Hex characters of the messageId digest (128 bits): any messageId the caller picks fits `ID_PATTERN`. */
const MESSAGE_HEX = 32;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The principal of an API token: a digest that names the caller without revealing the token. */
export function principalOf(apiToken: string): string {
  return sha256(`durable-a2a front door principal:${apiToken}`).slice(0, PRINCIPAL_HEX);
}

/** The front task id (the workflow id) of `messageId` sent by `principal`: `a2a-<principal>-<digest>`, 53 characters. */
export function frontTaskId(principal: string, messageId: string): string {
  return `${taskIdPrefix(principal)}${sha256(messageId).slice(0, MESSAGE_HEX)}`;
}

/** The prefix of every reply messageId the front door derives (`frontReplyId`). */
const FRONT_REPLY_ID_PREFIX = 'a2a-reply-';

/**
 * The reply messageId of a follow-up `messageId` the caller sent on task `taskId`: `a2a-reply-<digest>`, 42 characters.
 * The caller's retry of a follow-up (same messageId) is the same reply (`Producer.reply`'s `messageId`), and the same
 * messageId on two tasks is two replies.
 */
export function frontReplyId(taskId: string, messageId: string): string {
  return `${FRONT_REPLY_ID_PREFIX}${sha256(`${taskId}\n${messageId}`).slice(0, MESSAGE_HEX)}`;
}

/** The prefix every front task id starts with (whoever the caller). */
export const FRONT_TASK_ID_PREFIX = 'a2a-';

/** The prefix every task id of `principal` starts with. */
export function taskIdPrefix(principal: string): string {
  return `${FRONT_TASK_ID_PREFIX}${principal}-`;
}

/** True when `taskId` is a front task of `principal` (any other id, another caller's included, is "not found"). */
export function isTaskOf(principal: string, taskId: string): boolean {
  return taskId.startsWith(taskIdPrefix(principal)) && taskId.length === taskIdPrefix(principal).length + MESSAGE_HEX;
}

/**
 * The authenticated caller of one request (the SDK's `User`): its principal, its token's tenant and role (its tasks are
 * that tenant's workflows, docs/tenants.md), a signal that aborts when the caller's connection closes (a blocking
 * send or a stream stops waiting then), and a wait for its connection to take what was written (a stream's next view).
 */
export class FrontDoorCaller implements User {
  constructor(
    readonly principal: string,
    readonly disconnected: AbortSignal,
    readonly scope: ProducerScope = OPERATOR_SCOPE,
    /** Resolves once the caller's connection took what was written to it (events.ts `Drained`). Default: at once. */
    readonly drained: () => Promise<void> = async () => undefined,
  ) {}

  get isAuthenticated(): boolean {
    return true;
  }

  get userName(): string {
    return this.principal;
  }
}
