/**
 * 0.3 end of stream: a status update with `final:true` is the last event
 * (spec v0.3.0 §7.2), whether or not the server then closes the connection.
 */
import { StreamEndTracker } from '../stream.ts';
import type { EventStream } from '../transport.ts';

/**
 * Passes `inner`'s events through and stops after the one for which
 * `sawFinal()` turned true, releasing the connection. The `StreamEnd` is
 * computed from the normalized states as for 1.0 (terminal / interrupted /
 * incomplete); `final` itself never decides the kind.
 */
export async function* stopAtFinal(inner: EventStream, sawFinal: () => boolean): EventStream {
  const tracker = new StreamEndTracker();
  try {
    for (;;) {
      const next = await inner.next();
      if (next.done) return next.value;
      tracker.observe(next.value);
      yield next.value;
      if (sawFinal()) return tracker.end();
    }
  } finally {
    // Runs on `final`, on an early `return()` by the consumer, and on errors: closes the body.
    await inner.return({ kind: 'incomplete', eventCount: 0 }).catch(() => undefined);
  }
}
