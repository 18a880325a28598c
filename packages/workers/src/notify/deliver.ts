/**
 * Delivering one notification event to its receiver (the notify queue's job): signed per Standard Webhooks
 * (`standardwebhooks`: headers `webhook-id` = the event id, `webhook-timestamp` = unix seconds, `webhook-signature` =
 * `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` under the secret), POSTed through the address policy's
 * dispatcher with a deadline, the answer's body discarded unread (nothing a receiver sends is used). At least once:
 * a 2xx is journaled `delivered` (a repeat of a delivered event is skipped); anything else throws, and BullMQ
 * retries with jittered exponential backoff up to the event's tries, after which the event is journaled `failed`
 * and waits in the failed set (counted in `durable_a2a_notifications_total{outcome="failed"}`).
 */
import { request } from 'undici';
import { Webhook } from 'standardwebhooks';
import type { NotifyJob } from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../context.ts';

/** A receiver answered with something other than 2xx, or could not be reached. Retryable (the job's tries). */
export class NotificationNotDeliveredError extends Error {
  override readonly name = 'NotificationNotDeliveredError';
  readonly code = 'NOTIFICATION_NOT_DELIVERED';
  constructor(
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Longest receiver answer read before it is dropped (bytes): the body is never used. */
const DISCARDED_BODY_LIMIT = 64 * 1024;

/** The signed request of one event at `nowMs`: body and headers (the test kit and docs spell the same scheme). */
export function signedNotification(secret: string, event: NotifyJob['event'], nowMs: number): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(event);
  const timestamp = new Date(Math.floor(nowMs / 1000) * 1000);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'durable-a2a-notify/1',
      'webhook-id': event.id,
      'webhook-timestamp': String(timestamp.getTime() / 1000),
      'webhook-signature': new Webhook(secret).sign(event.id, timestamp, body),
    },
  };
}

/**
 * Delivers `job` once (see the module header). Resolves 'delivered' or 'skipped' (journaled delivered already).
 * @throws NotificationNotDeliveredError (retry), Error when no secret is configured (retry: configuration may be fixed)
 */
export async function deliverNotification(ctx: WorkerContext, job: NotifyJob, run: JobRun): Promise<'delivered' | 'skipped'> {
  const { event, url } = job;
  const entry = await ctx.journal.notification(event.workflowId, event.id);
  if (entry?.stage === 'delivered') {
    ctx.metrics.notifications.inc({ kind: event.type, outcome: 'skipped' });
    return 'skipped';
  }
  const attempts = run.attemptsMade + 1;
  try {
    await post(ctx, url, event);
  } catch (error) {
    const last = attempts >= run.attempts;
    ctx.metrics.notifications.inc({ kind: event.type, outcome: last ? 'failed' : 'retried' });
    if (last) await ctx.journal.recordNotification(event.workflowId, event.id, 'failed', { kind: event.type, attempts });
    throw error;
  }
  await ctx.journal.recordNotification(event.workflowId, event.id, 'delivered', { kind: event.type, attempts });
  ctx.metrics.notifications.inc({ kind: event.type, outcome: 'delivered' });
  return 'delivered';
}

async function post(ctx: WorkerContext, url: string, event: NotifyJob['event']): Promise<void> {
  const secret = ctx.options.notify.secret;
  if (!secret) throw new NotificationNotDeliveredError('no notification signing secret configured (DA2A_NOTIFY_SECRET)');
  const { body, headers } = signedNotification(secret, event, ctx.options.now());
  const timeoutMs = ctx.options.notify.requestTimeoutMs;
  let status: number;
  try {
    const response = await request(url, {
      method: 'POST',
      body,
      headers,
      dispatcher: ctx.dispatcher,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), ctx.shutdownSignal]),
    });
    status = response.statusCode;
    await response.body.dump({ limit: DISCARDED_BODY_LIMIT }).catch(() => undefined);
  } catch (error) {
    throw new NotificationNotDeliveredError(`notification ${event.id} not delivered: ${(error as Error).message}`, undefined, { cause: error });
  }
  if (status < 200 || status > 299) throw new NotificationNotDeliveredError(`notification ${event.id} refused by its receiver: HTTP ${status}`, status);
}
