/**
 * Outbound notifications: what a person (or their tooling) is told, as one event shape for every kind. An event's
 * id is derived from its workflow, kind, delegation and occasion (`notificationEventId`), so an event emitted again
 * for the same occasion (a retried job, a second worker, a restart) has the same id and a receiver deduplicates it
 * by that id. Delivery is at least once (workers `notify/`); the id is what makes "once" the receiver's to keep.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ID_PATTERN } from '../journal/keys.ts';
import { WORKFLOW_ID_PATTERN } from '../journal/tenant.ts';

/**
 * The kinds of event: a question opened (a person can answer), a question expired (what was done), a workflow
 * needs a person (NEEDS_ATTENTION), a workflow finished (COMPLETED, FAILED, COMPENSATED, CANCELED), another task of
 * the agent found holding our message after the attempt finished (`duplicate.task`: the work may have been done
 * twice; the attempt's state and the workflow's outcome stand, a person checks), tasks that may hold our message too
 * could not be read after the attempt finished (`duplicate.unchecked`: the work may have been done twice, it could not
 * be checked; a person checks).
 */
export const NOTIFICATION_KINDS = ['question.opened', 'question.expired', 'attention.needed', 'workflow.finished', 'duplicate.task', 'duplicate.unchecked'] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

const Id = z.string().regex(ID_PATTERN);
/** Longest `occasion` (characters): question keys are message ids or timestamps, states and versions are short. */
const OCCASION_MAX = 256;
/** Largest `data` of one event, bytes of its JSON: a question's text and parts are shown, not its files. */
export const NOTIFICATION_DATA_MAX_BYTES = 64 * 1024;

/** An event as it is sent (the webhook body, JSON) and as the notify job carries it. */
export const NotificationEventSchema = z.object({
  /** Stable id (`notificationEventId`): the same occasion is the same id. */
  id: z.string().regex(/^evt_[0-9a-f]{32}$/),
  type: z.enum(NOTIFICATION_KINDS),
  /** When the event was first emitted (ISO 8601); retries send the same body. */
  createdAt: z.iso.datetime(),
  workflowId: z.string().regex(WORKFLOW_ID_PATTERN),
  delegationId: Id.optional(),
  /** Kind-specific facts (docs/people.md "Notifications" lists them per kind). */
  data: z.record(z.string(), z.unknown()),
});
export type NotificationEvent = z.infer<typeof NotificationEventSchema>;

/** What an emitter says: the kind, whose it is, its occasion (what makes it this one event) and its facts. */
export interface NotificationInput {
  kind: NotificationKind;
  workflowId: string;
  delegationId?: string;
  /**
   * What distinguishes this event from another of the same kind on the same workflow and delegation: the question
   * key for `question.*`, the workflow version the decision was made from for `attention.needed`, the finished
   * state for `workflow.finished`, the other task's id for `duplicate.task`, the lost count for `duplicate.unchecked`.
   * At most 256 characters.
   */
  occasion: string | number;
  data?: Record<string, unknown>;
}

/** What an event's free texts (failure reasons, an attention message: an agent's words) may take of its data, in JSON bytes. */
export const NOTIFICATION_TEXT_BUDGET_BYTES = 48 * 1024;

/**
 * `texts` cut so that their JSON together stays within `budgetBytes` (default `NOTIFICATION_TEXT_BUDGET_BYTES`):
 * each to an equal share, a cut one ending with '…'; texts within their share are returned as they are. An agent's
 * status message can be megabytes; an event over `NOTIFICATION_DATA_MAX_BYTES` could never be sent, and one that
 * reports a finished workflow is retried until it is (the outbox), so its texts are bounded, never its facts.
 */
export function boundedNotificationTexts(texts: readonly string[], budgetBytes = NOTIFICATION_TEXT_BUDGET_BYTES): string[] {
  const share = Math.max(16, Math.floor(budgetBytes / Math.max(1, texts.length)));
  return texts.map((text) => cutToJsonBytes(text, share));
}

function cutToJsonBytes(text: string, maxBytes: number): string {
  const bytes = (value: string) => Buffer.byteLength(JSON.stringify(value));
  if (bytes(text) <= maxBytes) return text;
  // Each step keeps 90 % of the characters: at most about 150 steps from 8 MiB down to the share.
  let end = Math.min(text.length, maxBytes);
  while (end > 0 && bytes(`${text.slice(0, end)}…`) > maxBytes) end = Math.floor(end * 0.9);
  return `${text.slice(0, end)}…`;
}

/** The stable id of an event: `evt_` and 32 hex digits of SHA-256 over workflow, kind, delegation and occasion. */
export function notificationEventId(input: Pick<NotificationInput, 'kind' | 'workflowId' | 'delegationId' | 'occasion'>): string {
  const digest = createHash('sha256').update([input.workflowId, input.kind, input.delegationId ?? '*', String(input.occasion)].join('\n')).digest('hex');
  return `evt_${digest.slice(0, 32)}`;
}

/**
 * The event for `input` at `nowMs`.
 * @throws RangeError when the occasion is longer than 256 characters or the data's JSON passes 64 KiB
 */
export function notificationEventOf(input: NotificationInput, nowMs: number): NotificationEvent {
  if (String(input.occasion).length > OCCASION_MAX) throw new RangeError(`notification occasion longer than ${OCCASION_MAX} characters`);
  const data = input.data ?? {};
  if (Buffer.byteLength(JSON.stringify(data)) > NOTIFICATION_DATA_MAX_BYTES) throw new RangeError(`notification data larger than ${NOTIFICATION_DATA_MAX_BYTES} bytes`);
  return NotificationEventSchema.parse({
    id: notificationEventId(input),
    type: input.kind,
    createdAt: new Date(nowMs).toISOString(),
    workflowId: input.workflowId,
    ...(input.delegationId ? { delegationId: input.delegationId } : {}),
    data,
  });
}
