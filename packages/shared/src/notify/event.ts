/**
 * Outbound notifications: what a person (or their tooling) is told, as one event shape for every kind. An event's
 * id is derived from its workflow, kind, delegation and occasion (`notificationEventId`), so an event emitted again
 * for the same occasion (a retried job, a second worker, a restart) has the same id and a receiver deduplicates it
 * by that id. Delivery is at least once (workers `notify/`); the id is what makes "once" the receiver's to keep.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ID_PATTERN } from '../journal/keys.ts';

/**
 * The kinds of event: a question opened (a person can answer), a question expired (what was done), a workflow
 * needs a person (NEEDS_ATTENTION), a workflow finished (COMPLETED, FAILED, COMPENSATED, CANCELED).
 */
export const NOTIFICATION_KINDS = ['question.opened', 'question.expired', 'attention.needed', 'workflow.finished'] as const;
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
  workflowId: Id,
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
   * state for `workflow.finished`. At most 256 characters.
   */
  occasion: string | number;
  data?: Record<string, unknown>;
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
