/**
 * Replies to a parked question (INPUT_REQUIRED / AUTH_REQUIRED): journaled before they are sent
 * (recordReply-1.lua), then moved through 'sending' (a lease), 'sent' or 'refused' (markReply-1.lua).
 */
import { journalErrorFromCode } from './errors.ts';
import { connectionGeneration } from './durability.ts';
import type { DelegationRef } from './core.ts';
import { JournalStatus } from './status.ts';

/** Journal methods over the replies to a delegation's questions. */
export class JournalReplies extends JournalStatus {
  /**
   * Journals a reply to the parked question before it is sent.
   * @returns the reply's messageId and whether it is new (false = this question was already answered).
   * @throws JournalError WRONG_STATE (not parked), DELEGATION_MISSING; ReplicationTimeoutError (durability on)
   */
  async recordReply(ref: DelegationRef, messageId: string, message: object): Promise<{ messageId: string; created: boolean }> {
    const generation = connectionGeneration(this.redis);
    const [code, id] = (await this.call('recordReply', [this.delegationKeys(ref)[0]], [messageId, JSON.stringify(message), this.now()])) as [
      number,
      string,
    ];
    if (code < 0) throw journalErrorFromCode(code, ref, 'recordReply');
    await this.awaitReplicas(ref.workflowId, generation); // the producer acknowledges the reply
    return { messageId: id, created: code === 1 };
  }

  /**
   * Moves the journaled reply to 'sending' (about to leave), 'sent' (delivered) or 'refused'
   * (the agent refused it for good; the question opens again and `reason` is kept as `replyError`).
   * 'sending' is a lease owned by `send.token` for `send.leaseMs`: it is taken from 'pending', or from
   * an expired 'sending' (the taker must then ask the agent before any resend). 'sent' / 'refused'
   * are accepted with the fencing token or the lease owner's token.
   * @returns false if it was not in the state before (another run moved it on, or holds a live lease).
   * @throws JournalError FENCE_LOST, DELEGATION_MISSING; ReplicationTimeoutError ('sending', durability on)
   */
  async markReply(
    ref: DelegationRef,
    fence: number,
    messageId: string,
    state: 'sending' | 'sent' | 'refused',
    reason = '',
    send: { token?: string; leaseMs?: number } = {},
  ): Promise<boolean> {
    const generation = connectionGeneration(this.redis);
    // As markSending: replicas behind, no 'sending' mark (a rerun in 'sending' asks the agent before any resend).
    if (state === 'sending') await this.awaitReplicas(ref.workflowId, generation);
    const now = this.now();
    const until = send.leaseMs === undefined ? '' : now + send.leaseMs;
    const code = Number(await this.call('markReply', [this.delegationKeys(ref)[0]], [fence, messageId, now, state, reason, send.token ?? '', until]));
    if (code < 0) throw journalErrorFromCode(code, ref, 'markReply');
    if (state === 'sending') await this.awaitReplicas(ref.workflowId, generation); // before the reply leaves
    return code >= 1;
  }

  /**
   * Takes the reply's 'sending' lease for `token` (C1): `taken` from 'pending'; `taken-over` from an
   * expired lease (the agent may have the reply: ask it before any resend); `busy` when another
   * worker's lease is live or the reply moved on.
   * @throws JournalError FENCE_LOST, DELEGATION_MISSING
   */
  async takeReplySend(ref: DelegationRef, fence: number, messageId: string, token: string, leaseMs: number): Promise<'taken' | 'taken-over' | 'busy'> {
    const generation = connectionGeneration(this.redis);
    await this.awaitReplicas(ref.workflowId, generation);
    const now = this.now();
    const code = Number(await this.call('markReply', [this.delegationKeys(ref)[0]], [fence, messageId, now, 'sending', '', token, now + leaseMs]));
    if (code < 0) throw journalErrorFromCode(code, ref, 'markReply');
    if (code >= 1) await this.awaitReplicas(ref.workflowId, generation); // before the reply leaves
    return code === 2 ? 'taken-over' : code === 1 ? 'taken' : 'busy';
  }
}
