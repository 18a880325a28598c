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

/** A push notification config of a front-door task as journaled (the caller's TaskPushNotificationConfig). */
export const FrontPushConfigSchema = z.object({
  id: z.string(),
  url: z.string(),
  /** Sent as `X-A2A-Notification-Token` with every push; '' for none. */
  token: z.string(),
  /** The optional `authentication` of the config (scheme and credentials), sent as `Authorization: <scheme> <credentials>`. */
  authentication: z.object({ scheme: z.string(), credentials: z.string() }).optional(),
  /** When it was written (ms). */
  at: z.number(),
});
export type FrontPushConfig = z.infer<typeof FrontPushConfigSchema>;

const writeFrontPushConfigScript = defineScript({
  name: 'writeFrontPushConfig',
  keys: ['configs'],
  encode: (input: { op: 'set' | 'delete'; id: string; json: string; limit: number; retentionMs: number }) => [input.op, input.id, input.json, input.limit, input.retentionMs],
  decode: outcomeDecoder({ 1: 'written', 0: 'missing', 2: 'full' }),
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

  /**
   * Writes push notification config `config` of front task `workflowId` (the same id replaces it), while the task holds
   * fewer than `limit` configs. Expires with the workflow's retention, renewed on each write.
   * @returns 'written', or 'full' when the task already holds `limit` other configs
   */
  async writeFrontPushConfig(workflowId: string, config: FrontPushConfig, limit: number): Promise<'written' | 'full'> {
    const input = { op: 'set' as const, id: config.id, json: JSON.stringify(FrontPushConfigSchema.parse(config)), limit, retentionMs: this.retentionMs };
    const outcome = await this.call(writeFrontPushConfigScript, { configs: this.keys.frontPushConfigs(workflowId) }, input);
    if (outcome !== 'written' && outcome !== 'full') throw new Error(`writeFrontPushConfig: unexpected outcome ${JSON.stringify(outcome)}`);
    return outcome;
  }

  /** Deletes push notification config `id` of front task `workflowId`. @returns true when it was there */
  async deleteFrontPushConfig(workflowId: string, id: string): Promise<boolean> {
    const outcome = await this.call(writeFrontPushConfigScript, { configs: this.keys.frontPushConfigs(workflowId) }, { op: 'delete', id, json: '', limit: 0, retentionMs: 0 });
    if (typeof outcome !== 'string') throw new Error(`deleteFrontPushConfig: unexpected refusal ${outcome.refused}`);
    return outcome === 'written';
  }

  /** True when front task `workflowId` holds at least one push notification config (one EXISTS). */
  async hasFrontPushConfigs(workflowId: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.frontPushConfigs(workflowId))) === 1;
  }

  /** The push notification configs of front task `workflowId`, by id (none once it expired with its workflow). */
  async frontPushConfigs(workflowId: string): Promise<FrontPushConfig[]> {
    const key = this.keys.frontPushConfigs(workflowId);
    const hash = await this.redis.hgetall(key);
    return Object.entries(hash)
      .sort(([first], [second]) => (first < second ? -1 : first > second ? 1 : 0))
      .map(([, text]) => this.parseAt('push config', key, () => FrontPushConfigSchema.parse(JSON.parse(text))));
  }
}
