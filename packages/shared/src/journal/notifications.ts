/**
 * The journal of outbound notifications: per workflow, each event id and the stage it reached (enqueued, failed,
 * delivered; recordNotification-1.lua, forward only). The notify processor reads it first (a delivered event is
 * not sent again after its job was removed) and writes each stage; the API and tests read it.
 */
import { z } from 'zod';
import { JournalCoordination } from './coordination.ts';
import { defineScript, outcomeDecoder } from './scripts.ts';

/** How far a notification event got. */
export const NOTIFICATION_STAGES = ['enqueued', 'failed', 'delivered'] as const;
export type NotificationStage = (typeof NOTIFICATION_STAGES)[number];

const NotificationEntrySchema = z.object({
  stage: z.enum(NOTIFICATION_STAGES),
  at: z.number(),
  kind: z.string(),
  attempts: z.number().int().min(0),
});
/** One event's entry: its stage, when it got there (ms), its kind and the receiver attempts made by then. */
export type NotificationEntry = z.infer<typeof NotificationEntrySchema>;

const recordNotificationScript = defineScript({
  name: 'recordNotification',
  keys: ['notifications'],
  encode: (input: { eventId: string; stage: NotificationStage; nowMs: number; kind: string; retentionMs: number; attempts: number }) => [
    input.eventId,
    input.stage,
    input.nowMs,
    input.kind,
    input.retentionMs,
    input.attempts,
  ],
  decode: outcomeDecoder({ 1: 'recorded', 0: 'unchanged' }),
});

/** Journal methods over a workflow's notification events. */
export class JournalNotifications extends JournalCoordination {
  /**
   * Records that event `eventId` of `workflowId` reached `stage` (never moves back).
   * @returns 'recorded', or 'unchanged' when it was already there or further
   */
  async recordNotification(workflowId: string, eventId: string, stage: NotificationStage, detail: { kind: string; attempts?: number }): Promise<'recorded' | 'unchanged'> {
    const input = { eventId, stage, nowMs: this.now(), kind: detail.kind, retentionMs: this.retentionMs, attempts: detail.attempts ?? 0 };
    const outcome = await this.call(recordNotificationScript, { notifications: this.keys.notifications(workflowId) }, input);
    if (typeof outcome !== 'string') throw new Error(`recordNotification: unexpected refusal ${outcome.refused}`);
    return outcome;
  }

  /** The entry of one event, or undefined when none was journaled (or it expired with its workflow). */
  async notification(workflowId: string, eventId: string): Promise<NotificationEntry | undefined> {
    const text = await this.redis.hget(this.keys.notifications(workflowId), eventId);
    return text ? this.parseAt('notification', this.keys.notifications(workflowId), () => NotificationEntrySchema.parse(JSON.parse(text))) : undefined;
  }

  /** Every journaled event of a workflow by id. */
  async notifications(workflowId: string): Promise<Record<string, NotificationEntry>> {
    const key = this.keys.notifications(workflowId);
    const hash = await this.redis.hgetall(key);
    return Object.fromEntries(Object.entries(hash).map(([eventId, text]) => [eventId, this.parseAt('notification', key, () => NotificationEntrySchema.parse(JSON.parse(text)))]));
  }
}
