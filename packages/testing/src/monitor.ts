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
 * server) is taken for a reply: "Command queue state error", once per such line, the second one uncaught
 * (redis/ioredis#1981, taskforcesh/bullmq#2505). So the connection is marked monitoring as soon as ioredis has sent
 * MONITOR (its `ready` event, a tick after the send and before any reply is read): MONITOR is then the only command in
 * flight, its +OK still resolves it (ioredis passes an "OK" through in monitoring mode), and every line after the +OK
 * is a `monitor` event. A start that fails all the same is dropped (a listener absorbs its connection's later errors)
 * and tried again on a new connection, up to 5 times.
 * @throws the last start's error after 5 failed starts
 */
export async function startMonitor(url: string): Promise<Redis> {
  let lastError: unknown;
  for (let attempt = 0; attempt < MONITOR_START_ATTEMPTS; attempt++) {
    const monitor = new Redis(url, { monitor: true, lazyConnect: true });
    // Set without ioredis's setStatus: its `monitoring` event must wait for the +OK (the server reports nothing
    // before it). ioredis's own type leaves out the 'monitoring' status it sets.
    monitor.once('ready', () => {
      (monitor as { status: string }).status = 'monitoring';
    });
    let failStart: (error: unknown) => void = () => {};
    const onStartError = (error: unknown) => failStart(error);
    monitor.on('error', onStartError);
    try {
      await new Promise<void>((resolve, reject) => {
        failStart = reject;
        monitor.once('monitoring', () => resolve());
        monitor.connect().catch(reject);
      });
      monitor.off('error', onStartError);
      return monitor;
    } catch (error) {
      lastError = error;
      // `onStartError` stays: the dropped connection's later errors land on a settled promise.
      monitor.disconnect();
    }
  }
  throw lastError;
}
