/**
 * The connections of one origin, with the free ones kept apart: a request goes to a free connection found in O(1).
 * undici's `Pool` looks through every connection of the origin for a free one, twice per request that finds none:
 * a worker holding n open streams on one agent (each stream holds its connection) paid O(n) per new request, and a
 * fresh worker reattaching 10,000 streams spent about a tenth of its CPU in that scan (docs/performance.md).
 *
 * Same contract as an unbounded `Pool` (the policy dispatcher's default): one undici `Client` per connection
 * (pipelining 1 by default), a new one when none is free, none ever closed for being idle (a `Client` reconnects on
 * its next request); a connection is free until its `dispatch` answers busy and free again at its `drain`; one that
 * failed to connect (`connectionError`) is dropped, as `Pool` drops it. The most recently freed connection is used
 * first, so a few warm connections carry the short requests and the others reach their keep-alive timeout.
 * Bounded pools (`connections`) stay undici's `Pool`: this one never queues.
 */
import { Client, Dispatcher, errors } from 'undici';

/** Unbounded connections to one origin, the free ones on a stack (see the module header). */
export class FreePool extends Dispatcher {
  readonly #origin: string | URL;
  readonly #options: Client.Options;
  readonly #clients = new Set<Client>();
  /** Free clients, the most recently freed last; each at most once (`#isFree`). */
  readonly #free: Client[] = [];
  readonly #isFree = new Set<Client>();
  #closing: Promise<void> | undefined;
  #destroyed = false;

  /** `options`: what undici's `Agent` hands its factory (the `Client` options, `connect` included). */
  constructor(origin: string | URL, options: Client.Options) {
    super();
    this.#origin = origin;
    this.#options = options;
  }

  /** True once `destroy` was called. */
  get destroyed(): boolean {
    return this.#destroyed;
  }

  /** True once `close` or `destroy` was called. */
  get closed(): boolean {
    return this.#closing !== undefined || this.#destroyed;
  }

  /** Dispatches on a free connection (a new one when none is free); after close, the handler gets `ClientClosedError`. */
  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    if (this.closed) {
      const error = this.#destroyed ? new errors.ClientDestroyedError() : new errors.ClientClosedError();
      if (typeof handler.onError !== 'function') throw error;
      handler.onError(error);
      return false;
    }
    const client = this.#takeFree() ?? this.#open();
    if (client.dispatch(options, handler)) this.#release(client);
    return true;
  }

  /** Closes every connection once its requests ended; later requests fail. */
  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    this.#closing ??= Promise.all([...this.#clients].map((client) => client.close())).then(() => undefined);
    if (!callback) return this.#closing;
    void this.#closing.then(callback);
  }

  /** Ends every connection now, failing their requests with `error`. */
  override destroy(): Promise<void>;
  override destroy(error: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(error: Error | null, callback: () => void): void;
  override destroy(first?: Error | null | (() => void), second?: () => void): Promise<void> | void {
    const error = typeof first === 'function' ? null : (first ?? null);
    const callback = typeof first === 'function' ? first : second;
    this.#destroyed = true;
    const done = Promise.all([...this.#clients].map((client) => client.destroy(error))).then(() => undefined);
    if (!callback) return done;
    void done.then(callback);
  }

  #takeFree(): Client | undefined {
    for (let client = this.#free.pop(); client !== undefined; client = this.#free.pop()) {
      if (this.#isFree.delete(client)) return client;
    }
    return undefined;
  }

  #release(client: Client): void {
    if (!this.#clients.has(client) || this.#isFree.has(client)) return;
    this.#isFree.add(client);
    this.#free.push(client);
  }

  #open(): Client {
    const client = new Client(this.#origin, this.#options);
    client
      .on('drain', () => this.#release(client))
      .on('connect', (origin, targets) => this.emit('connect', origin, [this, ...targets]))
      .on('disconnect', (origin, targets, error) => this.emit('disconnect', origin, [this, ...targets], error))
      .on('connectionError', (origin, targets, error) => {
        // Not used again (as undici's Pool: a client in this state cannot be closed, only dropped).
        this.#clients.delete(client);
        this.#isFree.delete(client);
        this.emit('connectionError', origin, [this, ...targets], error);
      });
    this.#clients.add(client);
    return client;
  }
}
