/**
 * Workflow change notifications: the journal publishes on
 * `<prefix>:{wf:<id>}:changed` when a workflow changes state (updateWorkflow)
 * and when a delegation opens a question (applyStatus). One subscriber
 * connection per process is shared by every waiter (`producer.waitFor`).
 */
import { Cluster, type Redis } from 'ioredis';
import type { Journal } from './journal.ts';

/** The channel a workflow's changes are published on (same hash tag as its keys). */
export function workflowChangeChannel(journal: Journal, workflowId: string): string {
  return `${journal.keys.workflow(workflowId).slice(0, -':wf'.length)}:changed`;
}

/** Wakes a waiter; `message`: what was published (a state name, or a finished workflow's compacted record). */
type Wake = (message?: string) => void;

/**
 * One subscriber connection per producer, shared by every waiter; channels
 * are subscribed while someone waits on them. Created on first use.
 */
export class WorkflowChangeSubscriber {
  #subscriber: Redis | Cluster | undefined;
  readonly #waiters = new Map<string, Set<Wake>>();

  constructor(private readonly redis: Redis | Cluster) {}

  /** Subscribes `wake` to `channel`; resolves once Redis confirmed the subscription. Returns the unsubscribe function. */
  async listen(channel: string, wake: Wake): Promise<() => Promise<void>> {
    const subscriber = this.#connection();
    let waiters = this.#waiters.get(channel);
    if (!waiters) {
      waiters = new Set();
      this.#waiters.set(channel, waiters);
    }
    waiters.add(wake);
    await subscriber.subscribe(channel);
    return async () => {
      waiters.delete(wake);
      if (waiters.size > 0 || this.#waiters.get(channel) !== waiters) return;
      this.#waiters.delete(channel);
      await subscriber.unsubscribe(channel).catch(() => undefined);
    };
  }

  async close(): Promise<void> {
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    this.#waiters.clear();
    if (subscriber) await subscriber.quit().catch(() => subscriber.disconnect());
  }

  #connection(): Redis | Cluster {
    if (this.#subscriber) return this.#subscriber;
    // A subscriber may queue its SUBSCRIBE until connected (a fail-fast producer client has no offline
    // queue); every wait is bounded by its caller (timeoutMs, signal, the API's request timeout).
    const subscriber = this.redis instanceof Cluster
      ? this.redis.duplicate(undefined, { enableOfflineQueue: true })
      : this.redis.duplicate({ enableOfflineQueue: true });
    subscriber.on('error', () => undefined); // commands reject to the waiter; reconnects are ioredis' job
    subscriber.on('message', (channel: string, message: string) => this.#waiters.get(channel)?.forEach((wake) => wake(message)));
    // Messages published while disconnected are lost: after a reconnect, every waiter reads again.
    let connections = 0;
    subscriber.on('ready', () => {
      if (++connections > 1) this.#waiters.forEach((waiters) => waiters.forEach((wake) => wake()));
    });
    this.#subscriber = subscriber;
    return subscriber;
  }
}

