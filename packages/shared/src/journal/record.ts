/**
 * The journal's view of one delegation attempt, parsed from its Redis hash with
 * zod (the hash is a boundary: another release may have written it).
 */
import { z } from 'zod';
import { JsonObjectSchema, MessageSchema, PartSchema, type Artifact } from '@durable-a2a/a2a/pure';
import { JOURNAL_STATES, QUESTION_EXPIRY_ACTIONS } from './states.ts';
import { RECORDED_ERROR_CODES } from './error-codes.ts';
import { count, enumOr, flag, optionalEnum, optionalJson, optionalMs, optionalText, requiredEnum, requiredJson, requiredNumber, requiredText } from './record-fields.ts';

/**
 * Where a delegation's push notification config life cycle stands (docs/http-api.md "Push notifications"): `creating`
 * (our config id journaled, Create may have left), `registered` (the agent listed or created it), `unconfirmed`
 * (the check or Create failed without proof either way), `refused` (the agent refused Create: nothing registered),
 * `deleted` (the one Delete at the end was claimed). Absent: not checked yet.
 */
export const PUSH_CONFIG_STATES = ['creating', 'registered', 'unconfirmed', 'refused', 'deleted'] as const;
export type PushConfigState = (typeof PUSH_CONFIG_STATES)[number];

/** The interface a delegation talks to, chosen from the Agent Card at first send and kept. */
export const AgentInterfaceRefSchema = z.object({
  url: z.string(),
  protocolBinding: z.enum(['JSONRPC', 'HTTP+JSON', 'GRPC']),
  protocolVersion: z.enum(['1.0', '0.3']),
  tenant: z.string().optional(),
});
export type AgentInterfaceRef = z.infer<typeof AgentInterfaceRefSchema>;

/** What we send: parts plus optional metadata and referenced tasks (spec §5.5 Message). */
export const OutgoingMessageSchema = z.object({
  parts: z.array(PartSchema).min(1),
  metadata: JsonObjectSchema.optional(),
  referenceTaskIds: z.array(z.string()).optional(),
});
export type OutgoingMessage = z.infer<typeof OutgoingMessageSchema>;

/**
 * A failure recorded on a delegation: stable code (one of `RECORDED_ERROR_CODES`; a code another release wrote that
 * this one does not know reads as `UNRECOGNIZED`), message, whether retrying could help.
 */
export const RecordedErrorSchema = z.object({
  code: z.enum(RECORDED_ERROR_CODES).catch('UNRECOGNIZED'),
  message: z.string(),
  retryable: z.boolean().optional(),
  /** Whether the request reached the agent (`deliveryOf(error)`, V5): only `not-sent` may be resent as "never reached". */
  delivery: z.enum(['not-sent', 'maybe', 'received']).optional(),
  /** The input limit that was exceeded (`LimitExceededError.limit`). */
  limit: z.string().optional(),
  /**
   * What arrived, when something did: `error` = the agent answered with an error (a JSON-RPC error
   * object or an HTTP error status), `unreadable` = an answer we could not read. A send that got an
   * `error` and whose message a conclusive search does not find created nothing (docs/a2a-edge.md "Delivery (V5)").
   */
  answer: z.enum(['error', 'unreadable']).optional(),
});
export type RecordedError = z.infer<typeof RecordedErrorSchema>;

/**
 * A part of the attempt's result refused over a limit (the row's `refusedResult`, noteRefusedResult-1.lua): the first
 * refusal's error, and the ids of the artifacts refused when the refusals knew them (`artifactIds`, each once, at
 * most `REFUSED_ARTIFACT_IDS_MAX`, each at most `REFUSED_ARTIFACT_ID_BYTES_MAX` UTF-8 bytes); `artifactIdsLost`: an id
 * refused past those bounds was not kept, so no read can show that every refused artifact is back (journal
 * refused-result.ts `refusedResultShown`).
 */
export const RefusedResultSchema = RecordedErrorSchema.extend({
  artifactIds: z.array(z.string()).optional(),
  artifactIdsLost: z.literal(true).optional(),
});
export type RefusedResult = z.infer<typeof RefusedResultSchema>;

/**
 * Characters of a `RecordedError.message` (and `limit`) the journal keeps (default 1,000). An error's message often
 * carries an agent's own text (a JSON-RPC error's `message`, an HTTP error body), which the agent may make as long as
 * the response limit allows: the journal keeps a bounded excerpt, ending in `…` when clipped, so an attempt's record
 * and every view of it stay small whatever the agent answers (attack 23).
 */
export const RECORDED_ERROR_TEXT_MAX = 1_000;

const clipped = (text: string): string => (text.length > RECORDED_ERROR_TEXT_MAX ? `${text.slice(0, RECORDED_ERROR_TEXT_MAX)}…` : text);

/**
 * The one way a `RecordedError` becomes journal text (JSON): its `message` and `limit` clipped to
 * `RECORDED_ERROR_TEXT_MAX` characters. Every script input that writes an error field goes through it.
 */
export function encodeRecordedError(error: RecordedError): string {
  const bounded: RecordedError = { ...error, message: clipped(error.message) };
  if (error.limit !== undefined) bounded.limit = clipped(error.limit);
  return JSON.stringify(bounded);
}

/**
 * Parses a delegation hash (HGETALL) into a typed record. Throws a ZodError on a corrupt row. Each field's kind
 * (record-fields.ts) also gives its fast reading (`parseDelegationHash`, record-parse.ts).
 */
export const DelegationRecordSchema = z
  .object({
    workflowId: requiredText,
    delegationId: requiredText,
    step: requiredText,
    kind: enumOr(['step', 'compensation'], 'step'),
    attempt: requiredNumber,
    agentCardUrl: requiredText,
    agentInterface: optionalJson(AgentInterfaceRefSchema),
    messageId: requiredText,
    requestedContextId: optionalText,
    contextId: optionalText,
    contextRefused: flag,
    taskId: optionalText,
    state: requiredEnum(JOURNAL_STATES),
    statusTimestamp: optionalText,
    statusTimestampMs: optionalMs,
    question: optionalJson(MessageSchema),
    statusMessage: optionalJson(MessageSchema),
    /**
     * Bound to a task a Message answer named, not yet read (applyStatus-5.lua): no status of the agent applied since,
     * so the task's ownership is unproven (its first full read is judged by context or history) and a TaskNotFound
     * for it may make the Message the whole answer.
     */
    namedTaskUnread: flag,
    message: requiredJson(OutgoingMessageSchema),
    result: optionalJson(z.unknown()),
    error: optionalJson(RecordedErrorSchema),
    /**
     * The latest protocol error an agent caused without ending the attempt (noteProtocolError-1.lua; on a finished
     * attempt, DUPLICATE_TASK: noteDuplicateTask-1.lua), how many were noted, and the first ones before the latest
     * (`earlierProtocolErrors`, oldest first, at most `EARLIER_PROTOCOL_ERRORS_MAX`: a later note never hides them).
     */
    protocolError: optionalJson(RecordedErrorSchema),
    protocolErrorCount: count,
    earlierProtocolErrors: optionalJson(z.array(RecordedErrorSchema)),
    /**
     * A part of the attempt's result we refused over a limit (field case A32; noteRefusedResult-1.lua: the first
     * refusal kept, the refused artifacts' ids gathered): written by every path that refuses an agent's answer about
     * our task over a limit (a stream or push event, a push body, a read, a SendMessage answer). Until a full read
     * shows the result (`refusedResultShown`), a COMPLETED is never a plain success (workers
     * delegation/core/refused-result.ts: LIMIT_EXCEEDED, a person decides).
     */
    refusedResult: optionalJson(RefusedResultSchema),
    /**
     * How many artifacts the attempt's task has shown (spec §5.5 Artifact): one more for each artifact the row's
     * artifacts hash did not hold when an update or a Task's list stored it (applyArtifact-2.lua, applyStatus-5.lua, in
     * the transition that stores it); never lowered, so a finished Task whose list drops the artifacts a stream showed
     * keeps the count. 0 (absent): no artifact ever journaled. An unsuccessful attempt (REJECTED, FAILED, CANCELED)
     * with one or more counts as effect unknown in the workflow's decision (`effectOf`, decide-effects.ts): the agent
     * produced output, so the step is never re-delegated blind (attack33a). Not kept once the workflow is compacted
     * (its artifacts are).
     */
    artifactCount: count,
    push: flag,
    held: flag,
    pushToken: optionalText,
    /** The push notification config id the agent knows for our task: ours, or the one it assigned (notePushConfig-1.lua). */
    pushConfigId: optionalText,
    /** Where the push notification config life cycle stands (notePushConfig-1.lua); absent: not checked yet. */
    pushConfigState: optionalEnum(PUSH_CONFIG_STATES),
    createdAt: requiredNumber,
    updatedAt: requiredNumber,
    sendStartedAt: optionalMs,
    /** The send priority its workflow gave it (1 to 10, `send-priority.ts`); absent: the default. */
    priority: optionalMs,
    sendCount: count,
    resendCount: count,
    /**
     * Waiting for an agent that cannot be reached (noteUnreachable-1.lua): tries that found it unreachable (the
     * backoff exponent), tries among them that ended before a SendMessage was made (its Agent Card could not be
     * fetched), when the first one failed (ms) and when the next try is due (ms).
     */
    unreachableCount: count,
    unsentTries: count,
    /**
     * The sends a search proved absent at the agent (releaseForResend-1.lua with proof: every send that may have left
     * until then, as policy.ts `earlierSendsMayHaveLeft` counts them). Absent (0): none proven, every send counts.
     */
    provenAbsentSends: count,
    unreachableSince: optionalMs,
    nextTryAt: optionalMs,
    /** Waiting for a slot at its agent (noteSlotWait-1.lua: fleet-wide limits, this worker's share, a pause): until when (ms). */
    slotWaitUntil: optionalMs,
    version: requiredNumber,
    fence: count,
    notFoundCount: count,
    firstNotFoundAt: optionalMs,
    /** Progress rule (workers delegation/progress.ts): the mark, start and count of the current run of observations without progress, and the last one. */
    noProgressMark: optionalText,
    noProgressSince: optionalMs,
    noProgressCount: count,
    noProgressLast: optionalText,
    finishedAt: optionalMs,
    replyMessageId: optionalText,
    replyMessage: optionalJson(OutgoingMessageSchema),
    replyState: optionalEnum(['pending', 'sending', 'sent', 'refused']),
    /** Owner of the 'sending' lease of the reply (markReply-1.lua), and its deadline (ms). */
    replySendToken: optionalText,
    replySendUntil: optionalMs,
    /** Why the agent refused the last reply (the question is open again). */
    replyError: optionalText,
    /** The question (questionKey) the journaled reply answers. */
    replyForQuestion: optionalText,
    /** Who gave the journaled reply when it was not a caller of `reply`: `link <id>` (a signed answer link, answerByLink-2.lua), `expiry` (the step's default answer). */
    replyBy: optionalText,
    /** Identifies the current question: its message id, else its timestamp, else a sequence. */
    questionKey: optionalText,
    /** When the current question was journaled (ms): its life (`question.expiresAfterMs`, reminders) counts from here. */
    questionAskedAt: optionalMs,
    /**
     * Where the agent's words of a question without a status message begin (question-words.ts, A36): the messageId of
     * the last status message the row cleared (a status without a message after one with), and, on a row parked on a
     * question without words, the messageId of the last status message before it ('-': none). A read's history
     * gives the words after it only.
     */
    questionWordsAfter: optionalText,
    /** The questionKey of a question that expired unanswered (expireQuestion-2.lua), when (ms) and what was done. */
    questionExpired: optionalText,
    questionExpiredAt: optionalMs,
    questionExpiry: optionalEnum(QUESTION_EXPIRY_ACTIONS),
    effect: optionalEnum(['present', 'absent', 'unknown']),
    evidence: optionalJson(z.unknown()),
    verifiedAt: optionalMs,
    verifyAttempts: count,
    /**
     * Tasks refused pushes showed holding our message, waiting to be read by GetTask (noteSuspect-1.lua): the field's
     * JSON text, present only while some wait (`Journal.pendingSuspects` reads the list); and how many such tasks were
     * not kept or never read to a conclusion (`suspectsLost`: over the cap, an id too long, reads that kept failing),
     * and of how many of those a person was told on the finished row (`suspectsLostTold`, noteSuspectsUnchecked-1.lua).
     */
    suspects: optionalText,
    suspectsLost: count,
    suspectsLostTold: count,
    /**
     * Rounds of suspect reads in a row that could not read some (clearSuspects-1.lua), and when the last of them ended
     * (ms): the next read waits for the backoff from then (policy.ts `suspectRetryAt`).
     */
    suspectReadRounds: count,
    suspectReadRoundAt: optionalMs,
    /**
     * The round of suspect reads in flight (claimSuspectRound-1.lua): its claimer's token and until when (ms) the claim
     * holds; gone when the round ends (clearSuspects-1.lua). A job that sees it does not read (policy.ts `suspectReadTurn`).
     */
    suspectRoundBy: optionalText,
    suspectRoundUntil: optionalMs,
  })
  .transform(({ pushToken: _secret, ...record }) => record);
export type DelegationRecord = z.output<typeof DelegationRecordSchema>;

/** A delegation together with its artifacts (ordered by first appearance). */
export interface DelegationView extends DelegationRecord {
  artifacts: Artifact[];
}

/** Artifacts hash → list, ordered by first appearance. */
export function parseArtifacts(hash: Record<string, string>): Artifact[] {
  const ids = Object.keys(hash)
    .filter((field) => field.startsWith('order:'))
    .map((field) => field.slice('order:'.length))
    .sort((a, b) => Number(hash[`order:${a}`]) - Number(hash[`order:${b}`]));
  return ids.map((artifactId) => {
    const meta = JSON.parse(hash[`meta:${artifactId}`] ?? '{}') as Omit<Artifact, 'artifactId' | 'parts'>;
    const parts = JSON.parse(hash[`parts:${artifactId}`] ?? '[]') as Artifact['parts'];
    return { artifactId, ...meta, parts };
  });
}

/** True when a parked delegation's current question has no journaled reply yet and has not expired. */
export function isAwaitingAnswer(record: Pick<DelegationRecord, 'state' | 'questionKey' | 'replyForQuestion' | 'questionExpired'>): boolean {
  if (record.state !== 'INPUT_REQUIRED' && record.state !== 'AUTH_REQUIRED') return false;
  if (record.questionExpired !== undefined && record.questionExpired === record.questionKey) return false;
  return record.replyForQuestion === undefined || record.replyForQuestion !== record.questionKey;
}
