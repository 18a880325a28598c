/**
 * Push notifications of front tasks (spec §3.5, A2A 1.0 push): the caller's TaskPushNotificationConfigs, journaled
 * per front task (`Journal.writeFrontPushConfig`, at most `MAX_PUSH_CONFIGS_PER_TASK`, expiring with the workflow's
 * retention), and their delivery: while a task has configs, a watcher in the process that holds it follows the
 * task the way a stream does (the journal's change channel, read again every `refreshMs`) and POSTs each status or
 * artifact update as a StreamResponse (the SDK's 1.0 serializer) to every config's URL, with the config's token in
 * `X-A2A-Notification-Token`, retried with jittered exponential backoff (`PUSH_DELIVERY`). The configs are read
 * again before every push, so a deleted config gets no more. URLs pass the agents' address policy when written
 * and again at connection time (the policy dispatcher); redirects are not followed.
 *
 * Delivery runs in the API process (not the notify queue): a watcher lives as long as its process. Watches resume
 * in any replica: when the server starts and then every `PUSH_RESUME.everyMs` (jittered), `resume` finds the
 * unfinished front tasks (`a2a-` ids through the search index) that hold configs and starts a watcher for each one
 * this process does not watch yet, at most `PUSH_RESUME.candidates` per round; a config call starts one too. A
 * resumed watcher first pushes the task's current status once (deliveries are at least once: receivers dedupe on
 * the status; two replicas may both push the same update), then follows as usual. Every push is recorded in the
 * workflow's notification journal (`front-push:<config id>:<n>`, delivered or failed).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { request, type Dispatcher } from 'undici';
import { z } from 'zod';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { V1PushNotificationSerializer } from '@a2a-js/sdk/server';
import { checkUrl, createPolicyDispatcher, type AddressPolicyOptions } from '@durable-a2a/a2a';
import type { FrontPushConfig } from '@durable-a2a/shared';
import type { Producer } from '../../producer.ts';
import { TERMINAL_TASK_STATES, frontTask } from './task.ts';
import { STREAM_REFRESH_MS, nextView, statusUpdateOf, updatesBetween } from './events.ts';
import { FRONT_TASK_ID_PREFIX } from './caller.ts';

/** Most push notification configs one front task holds; one more is refused (RequestMalformedError). */
export const MAX_PUSH_CONFIGS_PER_TASK = 10;

/** Bounds of one push's delivery: attempts, backoff (ms, doubled per attempt up to `maxDelayMs`, full jitter), each POST's timeout (ms). */
export const PUSH_DELIVERY = { attempts: 5, baseDelayMs: 250, maxDelayMs: 5_000, timeoutMs: 10_000 } as const;

/**
 * Bounds of the resume rounds: every `everyMs` (ms, jittered by up to `jitterMs` either way), at most `candidates`
 * unfinished front tasks read from the search index (pages of `pageSize`), one EXISTS each.
 */
export const PUSH_RESUME = { everyMs: 30_000, jitterMs: 5_000, candidates: 500, pageSize: 100 } as const;

/** Workflow states of front tasks that may still change (a resumed watcher follows them). */
const UNFINISHED_WORKFLOW_STATES = ['RUNNING', 'COMPENSATING', 'NEEDS_ATTENTION'] as const;

/** A config as the caller sends it: bounded id, URL, token and credentials. */
export const PushConfigInputSchema = z.object({
  id: z.string().max(128).regex(/^[A-Za-z0-9._:-]*$/, 'a config id is letters, digits, ".", "_", ":" or "-"'),
  url: z.string().min(1, 'a push notification config needs a url').max(2_048),
  token: z.string().max(512),
  authentication: z.object({ scheme: z.string().min(1).max(64), credentials: z.string().max(4_096) }).optional(),
});

/** A config refused (bad shape, address refused by the policy, or the task holds the most configs). */
export class PushConfigRefusedError extends Error {
  override readonly name = 'PushConfigRefusedError';
}

/** Options of a `FrontDoorPushNotifier`. */
export interface FrontDoorPushOptions {
  producer: Producer;
  /** The policy agents' URLs pass (`allowLoopback` in tests). */
  addressPolicy: AddressPolicyOptions;
  /** How often a watcher reads the journal again besides the change channel (ms). Default `STREAM_REFRESH_MS`. */
  refreshMs?: number;
  /** Called with the error of a resume round that failed (the next round runs anyway). Default: ignored. */
  onResumeError?: (error: unknown) => void;
}

/** Jittered exponential backoff before attempt `attempt` (1-based: the second attempt waits after the first). */
function backoffMs(attempt: number): number {
  const cap = Math.min(PUSH_DELIVERY.maxDelayMs, PUSH_DELIVERY.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(cap / 2 + Math.random() * (cap / 2));
}

/** True for answers another attempt may change (the receiver is down, busy or timed out). */
const retryable = (statusCode: number) => statusCode >= 500 || statusCode === 408 || statusCode === 429;

export class FrontDoorPushNotifier {
  private readonly watching = new Map<string, Promise<void>>();
  private readonly closing = new AbortController();
  private readonly dispatcher: Dispatcher;
  private readonly serializer = new V1PushNotificationSerializer();
  private pushes = 0;
  private resumeTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: FrontDoorPushOptions) {
    this.dispatcher = createPolicyDispatcher(options.addressPolicy);
  }

  /** Validates and journals `input` for `taskId`; starts the task's watcher. Throws PushConfigRefusedError. */
  async create(taskId: string, input: z.input<typeof PushConfigInputSchema>): Promise<FrontPushConfig> {
    const parsed = PushConfigInputSchema.safeParse(input);
    if (!parsed.success) throw new PushConfigRefusedError(parsed.error.issues.map((issue) => `${issue.path.join('.') || 'config'}: ${issue.message}`).join('; '));
    try {
      await checkUrl(parsed.data.url, this.options.addressPolicy);
    } catch (error) {
      throw new PushConfigRefusedError(`url: ${(error as Error).message}`);
    }
    const config: FrontPushConfig = { ...parsed.data, id: parsed.data.id || randomUUID(), at: Date.now() };
    if ((await this.options.producer.journal.writeFrontPushConfig(taskId, config, MAX_PUSH_CONFIGS_PER_TASK)) === 'full') {
      throw new PushConfigRefusedError(`the task already holds ${MAX_PUSH_CONFIGS_PER_TASK} push notification configs (the most); delete one first`);
    }
    this.watch(taskId);
    return config;
  }

  /** The configs of `taskId` (and its watcher started in this process when it has any). */
  async list(taskId: string): Promise<FrontPushConfig[]> {
    const configs = await this.options.producer.journal.frontPushConfigs(taskId);
    if (configs.length > 0) this.watch(taskId);
    return configs;
  }

  /** Deletes config `id` of `taskId`. @returns true when it was there */
  delete(taskId: string, id: string): Promise<boolean> {
    return this.options.producer.journal.deleteFrontPushConfig(taskId, id);
  }

  /**
   * Runs a resume round now and then one every `PUSH_RESUME.everyMs` (jittered) until `close`. A failed round goes
   * to `onResumeError`.
   */
  startResuming(): void {
    if (this.resumeTimer || this.closing.signal.aborted) return;
    const round = () => {
      this.resume().catch((error: unknown) => this.options.onResumeError?.(error));
      const delayMs = PUSH_RESUME.everyMs + Math.round((Math.random() * 2 - 1) * PUSH_RESUME.jitterMs);
      this.resumeTimer = setTimeout(round, delayMs).unref();
    };
    round();
  }

  /**
   * One resume round: reads at most `PUSH_RESUME.candidates` unfinished front tasks from the search index and starts
   * a resumed watcher (current status pushed once, then followed) for each that holds configs and is not watched here.
   * @returns how many watchers it started
   */
  async resume(): Promise<number> {
    const { producer } = this.options;
    let started = 0;
    let budget: number = PUSH_RESUME.candidates;
    for (const state of UNFINISHED_WORKFLOW_STATES) {
      let cursor: string | undefined;
      do {
        if (this.closing.signal.aborted) return started;
        const page = await producer.search({ idPrefix: FRONT_TASK_ID_PREFIX, state }, { cursor, limit: Math.min(PUSH_RESUME.pageSize, budget) });
        budget -= page.items.length;
        for (const { workflowId: id } of page.items) {
          if (this.watching.has(id) || !(await producer.journal.hasFrontPushConfigs(id))) continue;
          if (this.watch(id, true)) started++;
        }
        cursor = page.cursor;
      } while (cursor && budget > 0);
      if (budget <= 0) break;
    }
    return started;
  }

  /** Stops every watcher, delivery and resume round of this process (pending pushes are not sent). */
  async close(): Promise<void> {
    clearTimeout(this.resumeTimer);
    this.closing.abort();
    await Promise.allSettled(this.watching.values());
    await this.dispatcher.close();
  }

  /**
   * Starts the watcher of `taskId` unless this process already runs one; a `resumed` one first pushes the current
   * status. @returns true when it started one
   */
  private watch(taskId: string, resumed = false): boolean {
    if (this.watching.has(taskId) || this.closing.signal.aborted) return false;
    const watcher = this.follow(taskId, resumed)
      .catch(() => undefined)
      .finally(() => this.watching.delete(taskId));
    this.watching.set(taskId, watcher);
    return true;
  }

  /**
   * Follows `taskId` until it is terminal, has no configs, or the notifier closes; pushes every update (and first
   * the current status when `resumed`: the process that watched before may have died before pushing it).
   */
  private async follow(taskId: string, resumed: boolean): Promise<void> {
    const { producer } = this.options;
    const signal = this.closing.signal;
    let view = await producer.get(taskId);
    let task = frontTask(view);
    if (resumed) await this.pushToAll(taskId, statusUpdateOf(task), task);
    while (!signal.aborted && !TERMINAL_TASK_STATES.has(task.status!.state)) {
      if ((await producer.journal.frontPushConfigs(taskId)).length === 0) return;
      view = await nextView(producer, taskId, view, signal, this.options.refreshMs ?? STREAM_REFRESH_MS);
      const next = frontTask(view);
      for (const update of updatesBetween(task, next)) await this.pushToAll(taskId, update, next);
      task = next;
    }
  }

  /** Pushes `update` to every config `taskId` holds now, each with its retries. */
  private async pushToAll(taskId: string, update: StreamResponse, task: Task): Promise<void> {
    const configs = await this.options.producer.journal.frontPushConfigs(taskId);
    const { body, contentType } = this.serializer.serialize(update, task);
    await Promise.all(configs.map((config) => this.deliver(taskId, config, body, contentType)));
  }

  /** POSTs `body` to `config.url` until a 2xx, a final refusal or `PUSH_DELIVERY.attempts`; journals the outcome. */
  private async deliver(taskId: string, config: FrontPushConfig, body: string, contentType: string): Promise<void> {
    const eventId = `front-push:${config.id}:${++this.pushes}`;
    const headers: Record<string, string> = { 'content-type': contentType };
    if (config.token) headers['x-a2a-notification-token'] = config.token;
    if (config.authentication) headers.authorization = `${config.authentication.scheme} ${config.authentication.credentials}`;
    for (let attempt = 1; attempt <= PUSH_DELIVERY.attempts && !this.closing.signal.aborted; attempt++) {
      if (attempt > 1) {
        try {
          await sleep(backoffMs(attempt - 1), undefined, { signal: this.closing.signal });
        } catch {
          return;
        }
        // A config deleted while its push waited gets no more.
        if (!(await this.options.producer.journal.frontPushConfigs(taskId)).some((current) => current.id === config.id)) return;
      }
      let statusCode = 0;
      try {
        const answer = await request(config.url, { method: 'POST', headers, body, dispatcher: this.dispatcher, headersTimeout: PUSH_DELIVERY.timeoutMs, bodyTimeout: PUSH_DELIVERY.timeoutMs, signal: this.closing.signal });
        statusCode = answer.statusCode;
        await answer.body.dump();
      } catch {
        statusCode = 0;
      }
      if (statusCode >= 200 && statusCode < 300) {
        await this.options.producer.journal.recordNotification(taskId, eventId, 'delivered', { kind: 'front-push', attempts: attempt });
        return;
      }
      if (statusCode !== 0 && !retryable(statusCode)) break;
      if (attempt === PUSH_DELIVERY.attempts) break;
    }
    await this.options.producer.journal.recordNotification(taskId, eventId, 'failed', { kind: 'front-push', attempts: PUSH_DELIVERY.attempts }).catch(() => undefined);
  }
}
