/**
 * Redis MONITOR for tests and benchmarks that count the commands a server runs.
 */
import { Redis } from 'ioredis';

/** Attempts `startMonitor` makes before it gives up. */
const MONITOR_START_ATTEMPTS = 5;

/**
 * A connection of its own in MONITOR mode on the server at `url`, ready when this resolves (its `monitor` events carry
 * every command the server runs from then on). ioredis marks a connection as monitoring a tick after MONITOR's +OK, so
 * a command line that arrives in the same read as the +OK (another client's ready-check INFO, or any command on a busy
 * server) is taken for a reply and fails the start with "Command queue state error" (redis/ioredis#1981,
 * taskforcesh/bullmq#2505). Such a start is dropped and tried again on a new connection, up to 5 times.
 * @throws the last start's error after 5 failed starts
 */
export async function startMonitor(url: string): Promise<Redis> {
  let lastError: unknown;
  for (let attempt = 0; attempt < MONITOR_START_ATTEMPTS; attempt++) {
    const monitor = new Redis(url, { monitor: true, lazyConnect: true });
    try {
      await new Promise<void>((resolve, reject) => {
        monitor.once('monitoring', () => resolve());
        monitor.once('error', reject);
        monitor.connect().catch(reject);
      });
      return monitor;
    } catch (error) {
      lastError = error;
      monitor.disconnect();
    }
  }
  throw lastError;
}
