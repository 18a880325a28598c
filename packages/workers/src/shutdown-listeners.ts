/**
 * Listeners of the fleet's close behind one listener on `shutdownSignal`. Node's EventTarget looks through every
 * listener already added on each `addEventListener` (its duplicate check), so one listener per open stream on the
 * fleet-wide signal made opening a stream cost O(open streams): about 1 s of a fresh worker's CPU while it
 * reattached 10,000 streams (docs/performance.md, recovery). Here an add and a removal are O(1).
 */
export class ShutdownListeners {
  private readonly listeners = new Set<() => void>();

  /** `signal`: the fleet's shutdown signal; aborting it calls every listener added (once each), in order of adding. */
  constructor(private readonly signal: AbortSignal) {
    signal.addEventListener(
      'abort',
      () => {
        const listeners = [...this.listeners];
        this.listeners.clear();
        for (const listener of listeners) listener();
      },
      { once: true },
    );
  }

  /** How many listeners wait for the close (each open stream has one). */
  get size(): number {
    return this.listeners.size;
  }

  /**
   * Calls `listener` once when the fleet closes (at once, before returning, when it already has).
   * @returns its removal (a no-op once it ran or was removed)
   */
  add(listener: () => void): () => void {
    if (this.signal.aborted) {
      listener();
      return () => undefined;
    }
    // A wrapper of its own: the same function added twice is two listeners, each removed by its own removal.
    const entry = () => listener();
    this.listeners.add(entry);
    return () => void this.listeners.delete(entry);
  }
}
