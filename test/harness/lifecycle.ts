/**
 * Per-test lifecycle for files that start their own agent, producer and fleet in each test: all three are closed
 * after every test, the fleet first (it may still call the agent), then the agent, then the producer.
 */
import { afterEach } from 'vitest';

/** Something a test started and must close. */
interface Closable {
  close(): Promise<unknown>;
}

/**
 * Registers an `afterEach` that closes what `current()` returns, in the order fleet, agent, producer (absent
 * ones skipped), then calls `reset()` so the next test starts from nothing.
 */
export function closeAfterEach(current: () => { fleet?: Closable | undefined; agent?: Closable | undefined; producer?: Closable | undefined }, reset: () => void): void {
  afterEach(async () => {
    const { fleet, agent, producer } = current();
    await fleet?.close();
    await agent?.close();
    await producer?.close();
    reset();
  });
}
