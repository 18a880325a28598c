/**
 * Replies to a parked question (INPUT_REQUIRED / AUTH_REQUIRED): journaled before they are sent
 * (recordReply-2.lua, answerByLink-2.lua, or an expiry's default answer: expireQuestion-2.lua), each indexed by its
 * messageId with its content digest in the workflow's answer index (lua/includes/answerIndex.lua: the one record of which
 * answers exist), then moved through 'sending' (a lease), 'sent' or 'refused' (markReply-1.lua).
 */
import { createHash, hash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { JournalError, unlessRefused } from './errors.ts';
import { arrayReply, defineScript, integerReply, outcomeDecoder, refusal, stringReply, ScriptReplyError, type Refused } from './scripts.ts';
import type { QuestionExpiryAction } from './states.ts';
import { connectionGeneration } from './durability.ts';
import type { DelegationRef } from './core.ts';
import type { Part } from '@durable-a2a/a2a/pure';
import { JournalFinishStep } from './finish-step.ts';
import { historyArgument, type HistoryEntryInput } from './history.ts';

/** The reason `Journal.markReply` keeps for a refusal the agent gave none for (an empty `replyError` reads as no refusal). */
export const REFUSED_WITHOUT_REASON = 'the agent refused the answer without saying why';

/**
 * The most answers one workflow's answer index holds (lua/includes/answerIndex.lua, keys.ts `answers`): one field
 * per answer journaled (`recordReply`, `answerByLink`, an expiry's default answer), each some 100 to 400 bytes (a messageId of at most 128 characters, a 32-digit
 * digest, a delegation id and a question key of at most 128 each), so at most a few MB for a workflow at the bound,
 * a few hundred bytes for a usual one. Past it an answer is refused (ANSWER_LIMIT), never an older id forgotten: a
 * forgotten id would let its retry become the answer to a later question. A person asked 10,000 questions in one
 * workflow is beyond any conversation we know of; such a workflow is canceled or resolved instead. An expiry's default
 * answer past it is journaled refused, never sent (`expireQuestion`): a person decides.
 */
export const ANSWERS_PER_WORKFLOW_MAX = 10_000;

/** `value` as JSON text with every object's keys sorted: one text per JSON value, whatever order its keys came in. */
function canonicalJson(value: unknown): string {
  const sorted = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(sorted);
    if (item === null || typeof item !== 'object') return item;
    return Object.fromEntries(Object.keys(item).sort().map((key) => [key, sorted((item as Record<string, unknown>)[key])]));
  };
  return JSON.stringify(sorted(JSON.parse(JSON.stringify(value))));
}

/**
 * An answer's content digest in the answer index: the first 32 hex digits (128 bits) of SHA-256 over its parts as
 * canonical JSON (keys sorted, members JSON leaves out left out), so a retry whose JSON library reordered a metadata
 * object's keys has the same digest (`sameAnswerParts` as one string).
 */
export function answerDigest(parts: readonly Part[]): string {
  return hash('sha256', canonicalJson(parts), 'hex').slice(0, 32);
}

/**
 * Whether two answers' parts are the same content as JSON: key order aside, members JSON leaves out aside (each side
 * read as JSON text would be). `left` undefined (not known) is never the same.
 */
export function sameAnswerParts(left: readonly Part[] | undefined, right: readonly Part[]): boolean {
  return left !== undefined && isDeepStrictEqual(JSON.parse(JSON.stringify(left)), JSON.parse(JSON.stringify(right)));
}

/**
 * What `recordReply` did: journaled this reply (`created`), or found it stored (`created: false`, `same: true`: this
 * content is the answer `messageId` already, the reply's own or the question's), or found the question's (or the
 * row's latest) reply `messageId` with other content (`created: false`, `same: false`: nothing journaled).
 */
export type RecordedReply = { messageId: string; created: true } | { messageId: string; created: false; same: boolean };

/**
 * A reply of a row from an earlier release (recordReply-2.lua's {3}: no index entry), to index on the next call: its
 * messageId, the SHA1 of its message JSON as the script returned it (the compare-and-set), and its parts' digest.
 */
interface Adopt {
  messageId: string;
  messageSha1: string;
  digest: string;
}

/** recordReply-2.lua's reply, decoded (see its header). */
type RecordReplyOutcome = { code: 0 | 1 | 2; messageId: string } | { code: 3; messageId: string; message: string };

/** recordReply-2.lua: journaled, the same answer stored, another content stored, a reply from before the index. */
const recordReplyScript = defineScript({
  name: 'recordReply',
  keys: ['delegation', 'answers'],
  encode: (input: { messageId: string; message: object; nowMs: number; history?: HistoryEntryInput; digest: string; limit: number; adopt?: Adopt }) => [
    input.messageId,
    JSON.stringify(input.message),
    input.nowMs,
    historyArgument(input.history),
    input.digest,
    input.limit,
    input.adopt ? `${input.adopt.messageId} ${input.adopt.messageSha1} ${input.adopt.digest}` : '',
  ],
  decode: (reply, script): RecordReplyOutcome | Refused => {
    const [code, messageId, message] = arrayReply(reply, script);
    const value = integerReply(code, script);
    if (value < 0) return refusal(value, script);
    if (value === 3) return { code: 3, messageId: stringReply(messageId, script), message: stringReply(message, script) };
    if (value !== 0 && value !== 1 && value !== 2) throw new ScriptReplyError(script, reply);
    return { code: value, messageId: stringReply(messageId, script) };
  },
});

/** The parts of a stored reply message (JSON text), undefined when they do not read as parts. */
function storedParts(message: string): Part[] | undefined {
  try {
    const parts = (JSON.parse(message) as { parts?: unknown }).parts;
    return Array.isArray(parts) ? (parts as Part[]) : undefined;
  } catch {
    return undefined;
  }
}

/** answerByLink-2.lua: the reply's messageId, and whether this call journaled it (false: the question was answered). */
const answerByLinkScript = defineScript({
  name: 'answerByLink',
  keys: ['delegation', 'answers'],
  encode: (input: { questionKey: string; linkId: string; messageId: string; message: object; nowMs: number; history?: HistoryEntryInput; digest: string; limit: number }) => [
    input.questionKey,
    input.linkId,
    input.messageId,
    JSON.stringify(input.message),
    input.nowMs,
    historyArgument(input.history),
    input.digest,
    input.limit,
  ],
  decode: (reply, script) => {
    const [code, messageId] = arrayReply(reply, script);
    const value = integerReply(code, script);
    return value < 0 ? refusal(value, script) : { messageId: stringReply(messageId, script), created: value === 1 };
  },
});

/** expireQuestion-2.lua's input (see its header). */
interface ExpireQuestionInput {
  questionKey: string;
  action: QuestionExpiryAction;
  nowMs: number;
  /** With `answer`: the default answer, journaled as the reply (by `expiry`). */
  reply?: { messageId: string; message: { parts: Part[] } };
}

/** What expireQuestion-2.lua did, and the row's version after it. */
export interface QuestionExpiry {
  /** `expired` by this call; `already-expired` (an earlier call; what was done is the row's `questionExpiry`); `answered` first (or the question moved on). */
  outcome: 'expired' | 'already-expired' | 'answered';
  version: number;
  /**
   * `expired` with `answer` at a full answer index (`ANSWERS_PER_WORKFLOW_MAX`): the default answer is journaled
   * refused (`replyError` `DEFAULT_ANSWER_OVER_LIMIT`), never sent; a person decides (the `reply-refused` row).
   */
  defaultAnswerRefused?: true;
}

/** The `replyError` of a default answer refused because the workflow's answer index is full (expireQuestion-2.lua). */
const DEFAULT_ANSWER_OVER_LIMIT = `not sent: the workflow holds its most answers (${ANSWERS_PER_WORKFLOW_MAX}, ANSWER_LIMIT)`;

const EXPIRY_OUTCOMES = { 1: 'expired', 4: 'expired', 2: 'already-expired', 0: 'answered' } as const;

/** expireQuestion-2.lua: the question expired now (its default answer refused: 4), before, or was answered first; the row's version. */
const expireQuestionScript = defineScript({
  name: 'expireQuestion',
  keys: ['delegation', 'answers'],
  encode: (input: ExpireQuestionInput) => [
    input.questionKey,
    input.action,
    input.nowMs,
    input.reply?.messageId ?? '',
    input.reply ? JSON.stringify(input.reply.message) : '',
    input.reply ? answerDigest(input.reply.message.parts) : '',
    ANSWERS_PER_WORKFLOW_MAX,
    DEFAULT_ANSWER_OVER_LIMIT,
  ],
  decode: (reply, script): QuestionExpiry | Refused => {
    const [code, version] = arrayReply(reply, script);
    const value = integerReply(code, script);
    if (value < 0) return refusal(value, script);
    const outcome = EXPIRY_OUTCOMES[value as keyof typeof EXPIRY_OUTCOMES];
    if (outcome === undefined) throw new ScriptReplyError(script, reply);
    return { outcome, version: integerReply(version, script), ...(value === 4 ? { defaultAnswerRefused: true as const } : {}) };
  },
});

/** markReply-1.lua's input (see its header). */
interface MarkReplyInput {
  fence: number;
  messageId: string;
  nowMs: number;
  state: 'sending' | 'sent' | 'refused';
  reason: string;
  sendToken: string;
  /** With 'sending': the lease deadline (ms); '' none. */
  sendUntil: number | '';
  /** With 'refused': the refusal's history entry. */
  history?: HistoryEntryInput;
}

/** markReply-1.lua: 'marked', 'taken over' (from an expired 'sending' lease) or 'unchanged' (not in the state before). */
const markReplyScript = defineScript({
  name: 'markReply',
  keys: ['delegation'],
  encode: (input: MarkReplyInput) => [input.fence, input.messageId, input.nowMs, input.state, input.reason, input.sendToken, input.sendUntil, historyArgument(input.history)],
  decode: outcomeDecoder({ 1: 'marked', 2: 'taken over', 3: 'workflow stopping', 0: 'unchanged' }),
});

/** Journal methods over the replies to a delegation's questions. */
export class JournalReplies extends JournalFinishStep {
  /**
   * Journals a reply to the parked question before it is sent, indexes its messageId in the workflow's answer index
   * (recordReply-2.lua, at most `ANSWERS_PER_WORKFLOW_MAX`), and (when new) writes its history entry: its parts, when,
   * and `by` (who answered: `token <name>`, `session <name>`, `link <id>`; history.ts `ActorSchema`). A messageId in
   * the index is that answer for the workflow's whole life (the bounded history may have dropped its entry).
   * @returns the reply's messageId and whether it is new; when not, `same` says whether this content is the stored
   *   answer `messageId` (the reply's own id, whatever question the row is parked on now; or the question's answer)
   * @throws JournalError REPLY_CONFLICT (`messageId` is an answer with other content: nothing written), ANSWER_LIMIT
   *   (the index is full: nothing written), WRONG_STATE (not parked), DELEGATION_MISSING; ReplicationTimeoutError
   */
  async recordReply(ref: DelegationRef, messageId: string, message: { parts: Part[] }, by?: string): Promise<RecordedReply> {
    const generation = connectionGeneration(this.redis);
    const nowMs = this.now();
    const history: HistoryEntryInput = { kind: 'answer', at: nowMs, delegationId: ref.delegationId, messageId, parts: message.parts, ...(by ? { by } : {}) };
    const keys = { delegation: this.delegationKeys(ref)[0], answers: this.keys.answers(ref.workflowId) };
    const input = { messageId, message, nowMs, history, digest: answerDigest(message.parts), limit: ANSWERS_PER_WORKFLOW_MAX };
    let outcome = unlessRefused(await this.call(recordReplyScript, keys, input), ref, 'recordReply');
    // A reply of an earlier release's row (no index entry): indexed with its digest on a second call, compare-and-set
    // on its message; the second call's own outcome then stands (a {3} again: the row changed, or the index is full).
    const before = outcome.code === 3 ? storedParts(outcome.message) : undefined;
    if (outcome.code === 3 && before) {
      const adopt = { messageId: outcome.messageId, messageSha1: createHash('sha1').update(outcome.message).digest('hex'), digest: answerDigest(before) };
      outcome = unlessRefused(await this.call(recordReplyScript, keys, { ...input, adopt }), ref, 'recordReply');
    }
    await this.awaitReplicas(ref.workflowId, generation); // the producer acknowledges the reply (or its index entry)
    if (outcome.code === 1) return { messageId, created: true };
    const same = outcome.code === 0 || (outcome.code === 3 && sameAnswerParts(storedParts(outcome.message), message.parts));
    // A reply of the row from before the index under this very messageId, with other content: the same conflict.
    if (!same && outcome.messageId === messageId) throw new JournalError('REPLY_CONFLICT', ref, 'recordReply');
    return { messageId: outcome.messageId, created: false, same };
  }

  /**
   * The answer `messageId` of workflow `workflowId` in its answer index (kept after the workflow finished, as long
   * as its record), compared with `parts`: its delegation and whether it is the same content (`answerDigest`).
   * Undefined when the index has no such answer (none given, or given before the index: see the history).
   */
  async findAnswer(workflowId: string, messageId: string, parts: readonly Part[]): Promise<{ delegationId: string; same: boolean } | undefined> {
    const entry = await this.redis.hget(this.keys.answers(workflowId), messageId);
    if (entry === null) return undefined;
    const [digest = '', delegationId = ''] = entry.split(' ');
    return { delegationId, same: digest === answerDigest(parts) };
  }

  /**
   * Journals the answer given through a signed answer link (answerByLink-2.lua): single use, on the question the
   * link names, recorded as answered by `link <linkId>`, and indexed in the workflow's answer index as every answer is.
   * @returns the reply's messageId and whether it is new (false: this question already has a reply: the link is used)
   * @throws JournalError WRONG_STATE (not parked on that question: closed), ANSWER_LIMIT (the index is full: nothing
   *   written), DELEGATION_MISSING; ReplicationTimeoutError
   */
  async answerByLink(ref: DelegationRef, link: { questionKey: string; linkId: string }, messageId: string, message: { parts: Part[] }): Promise<{ messageId: string; created: boolean }> {
    const generation = connectionGeneration(this.redis);
    const nowMs = this.now();
    const { parts } = message;
    const history: HistoryEntryInput = { kind: 'answer', at: nowMs, delegationId: ref.delegationId, messageId, parts, by: `link ${link.linkId}` };
    const input = { questionKey: link.questionKey, linkId: link.linkId, messageId, message, nowMs, history, digest: answerDigest(parts), limit: ANSWERS_PER_WORKFLOW_MAX };
    const keys = { delegation: this.delegationKeys(ref)[0], answers: this.keys.answers(ref.workflowId) };
    const recorded = unlessRefused(await this.call(answerByLinkScript, keys, input), ref, 'answerByLink');
    await this.awaitReplicas(ref.workflowId, generation);
    return recorded;
  }

  /**
   * Expires the open question `questionKey` (unanswered past its step's `question.expiresAfterMs`) and journals what
   * is done (`action`; with `answer`, `reply` is journaled as the reply by `expiry` and indexed in the workflow's
   * answer index, then sent by the reply path; at a full index journaled refused instead: `defaultAnswerRefused`).
   * Compare-and-set against `recordReply`: of an answer and the expiry, the first script wins.
   * @throws JournalError WRONG_STATE (not parked), DELEGATION_MISSING; ReplicationTimeoutError (durability on)
   */
  async expireQuestion(ref: DelegationRef, input: ExpireQuestionInput): Promise<QuestionExpiry> {
    const generation = connectionGeneration(this.redis);
    const keys = { delegation: this.delegationKeys(ref)[0], answers: this.keys.answers(ref.workflowId) };
    const expired = unlessRefused(await this.call(expireQuestionScript, keys, input), ref, 'expireQuestion');
    if (expired.outcome === 'expired') await this.awaitReplicas(ref.workflowId, generation);
    return expired;
  }

  /**
   * Moves the journaled reply to 'sending' (about to leave), 'sent' (delivered) or 'refused'
   * (the agent refused it for good; the question opens again and `reason` is kept as `replyError`; a blank one as
   * `REFUSED_WITHOUT_REASON`, so a refusal always reads as one).
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
    const until: number | '' = send.leaseMs === undefined ? '' : now + send.leaseMs;
    // A refusal always keeps a reason: an empty `replyError` reads as no refusal (the views, `question.opened`).
    if (state === 'refused' && reason.trim() === '') reason = REFUSED_WITHOUT_REASON;
    const history: HistoryEntryInput | undefined = state === 'refused' ? { kind: 'answer-refused', at: now, delegationId: ref.delegationId, messageId, reason } : undefined;
    const input = { fence, messageId, nowMs: now, state, reason, sendToken: send.token ?? '', sendUntil: until, history };
    const marked = unlessRefused(await this.call(markReplyScript, { delegation: this.delegationKeys(ref)[0] }, input), ref, 'markReply');
    if (state === 'sending') await this.awaitReplicas(ref.workflowId, generation); // before the reply leaves
    return marked === 'marked' || marked === 'taken over';
  }

  /**
   * Takes the reply's 'sending' lease for `token` (C1): `taken` from 'pending'; `taken-over` from an
   * expired lease (the agent may have the reply: ask it before any resend); `busy` when another
   * worker's lease is live or the reply moved on; `workflow-stopping` when it is a step's reply and its workflow is
   * stopping (canceled, or a step failed for good: stepStopped.lua, checked atomically with the take), never sent.
   * @throws JournalError FENCE_LOST, DELEGATION_MISSING
   */
  async takeReplySend(ref: DelegationRef, fence: number, messageId: string, token: string, leaseMs: number): Promise<'taken' | 'taken-over' | 'busy' | 'workflow-stopping'> {
    const generation = connectionGeneration(this.redis);
    await this.awaitReplicas(ref.workflowId, generation);
    const now = this.now();
    const input = { fence, messageId, nowMs: now, state: 'sending' as const, reason: '', sendToken: token, sendUntil: now + leaseMs };
    const marked = unlessRefused(await this.call(markReplyScript, { delegation: this.delegationKeys(ref)[0] }, input), ref, 'markReply');
    if (marked === 'workflow stopping') return 'workflow-stopping';
    if (marked !== 'unchanged') await this.awaitReplicas(ref.workflowId, generation); // before the reply leaves
    return marked === 'taken over' ? 'taken-over' : marked === 'marked' ? 'taken' : 'busy';
  }
}
