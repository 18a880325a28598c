/**
 * The workers' backoff while Redis is up but will not take their commands: a server at maxmemory with
 * noeviction (OOM), a replica (READONLY), a failed save (MISCONF), too few replicas (NOREPLICAS), slots in motion
 * (MOVED/ASK/TRYAGAIN/CLUSTERDOWN; a Cluster client answers these itself and rejects only once its redirections
 * are exhausted).
 *
 * Why at the connection: a lost connection is already backed off by ioredis (commands wait in its offline queue
 * while it reconnects on `redisReconnectDelayMs`), but a refusing server answers at once, and BullMQ's fetch loop
 * retries a refused fetch without any delay (its retry delay applies only to connection errors): two workers sent
 * thousands of refused commands per second. The gate makes a refusal behave like a lost connection for every
 * caller of the guarded clients (BullMQ's Queues and Workers, the journal, the registry) without each of them
 * knowing: on a refusal the gate closes for `redisBackoffMs(round)` (exponential, equal jitter, capped), commands
 * issued meanwhile wait in order, and are sent when it opens; the next refusal closes it for the next round.
 * Order on a connection is kept (a MULTI … EXEC issued in one turn stays together), nothing is dropped, and a
 * held command is never sent twice.
 *
 * One episode, two log lines: `Redis refusing commands; backing off` (warn) at the first refusal, `Redis taking
 * commands again` (info) when it ends, with the episode's kind, refusal count and length. The end is proven by
 * `probe` (the journal's `probeWrites`, one short-lived SET), sent each time the gate opens during an episode:
 * not by any success, since reads (and some scripts) are answered while writes are refused.
 *
 * Not gated: `unreachable` (ioredis' reconnect backoff, logged by `logRedisConnectionState`), `script-missing`
 * (a NOSCRIPT is answered on the command it hit, inside ioredis, which loads the script and sends it again at
 * once: the only useful answer, and a routine one after a restart or a SCRIPT FLUSH; holding commands on it
 * would delay every first script call), and `other`.
 */
import type { Logger } from './logger.ts';
import { redisErrorKind, type RedisErrorKind } from './redis-errors.ts';
import type { RedisClient } from './redis.ts';

/** First backoff round's ceiling (ms). */
export const REDIS_BACKOFF_BASE_MS = 100;
/** Every round's ceiling (ms): a refusing server is asked again at least this often (half of it at the soonest). */
export const REDIS_BACKOFF_CAP_MS = 5_000;

/**
 * Delay before attempt `round` (1-based), ms: equal jitter over an exponential ceiling,
 * `ceiling / 2 + random() * ceiling / 2` with `ceiling = min(capMs, baseMs * 2^(round - 1))`.
 */
export function redisBackoffMs(round: number, random: () => number = Math.random, baseMs: number = REDIS_BACKOFF_BASE_MS, capMs: number = REDIS_BACKOFF_CAP_MS): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(Math.max(round, 1) - 1, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** The kinds the gate backs off on. */
const GATED_KINDS: ReadonlySet<RedisErrorKind> = new Set(['refusing-writes', 'moving']);

export interface RedisRefusalGateOptions {
  logger: Logger;
  /** Default `Math.random`. */
  random?: () => number;
  /** Default `Date.now`. */
  now?: () => number;
  /** See `redisBackoffMs`. Defaults `REDIS_BACKOFF_BASE_MS`, `REDIS_BACKOFF_CAP_MS`. */
  baseMs?: number;
  capMs?: number;
  /** A write that proves the server takes writes again (resolves) or refuses it (rejects); sent through a guarded client. */
  probe: () => Promise<unknown>;
  /** Called once per refused command (a metric). */
  onRefusal?: (kind: RedisErrorKind) => void;
}

/** What the gate needs of an ioredis `Command`: its reply. */
interface Command {
  promise: Promise<unknown>;
}
type SendCommand = (command: Command, ...rest: unknown[]) => unknown;

interface Episode {
  kind: RedisErrorKind;
  since: number;
  refusals: number;
  reason: string;
}

/** A shared gate for the clients of one process that talk to one Redis (see the module comment). */
export class RedisRefusalGate {
  readonly #options: Required<Omit<RedisRefusalGateOptions, 'onRefusal'>> & Pick<RedisRefusalGateOptions, 'onRefusal'>;
  #held: (() => void)[] = [];
  #closed = false;
  #timer: NodeJS.Timeout | undefined;
  #round = 0;
  #episode: Episode | undefined;
  #ended = false;

  constructor(options: RedisRefusalGateOptions) {
    this.#options = { random: Math.random, now: Date.now, baseMs: REDIS_BACKOFF_BASE_MS, capMs: REDIS_BACKOFF_CAP_MS, ...options };
  }

  /** The episode under way, if any (kind, since when, refusals so far). */
  get episode(): Readonly<Episode> | undefined {
    return this.#episode;
  }

  /** Routes every command of `client` through the gate (its own `sendCommand`; `duplicate()`s are not guarded). */
  guard(client: RedisClient): void {
    const target = client as unknown as { sendCommand: SendCommand };
    const send = target.sendCommand.bind(client) as SendCommand;
    target.sendCommand = (command, ...rest) => {
      this.#watch(command);
      if (!this.#closed) return send(command, ...rest);
      this.#held.push(() => void send(command, ...rest));
      return command.promise;
    };
  }

  /** Opens the gate for good (sends what it holds): call before closing the guarded clients. */
  end(): void {
    this.#ended = true;
    this.#open();
  }

  #watch(command: Command): void {
    command.promise.then(undefined, (error: unknown) => this.#failed(error));
  }

  /** The probe went through: the episode is over. */
  #recovered(): void {
    const episode = this.#episode;
    if (!episode || this.#closed) return;
    this.#episode = undefined;
    this.#round = 0;
    this.#options.logger.info({ redis: 'taking-commands', kind: episode.kind, refusals: episode.refusals, refusingForMs: this.#options.now() - episode.since }, 'Redis taking commands again');
  }

  #failed(error: unknown): void {
    const kind = redisErrorKind(error);
    if (!GATED_KINDS.has(kind)) return;
    const now = this.#options.now();
    this.#options.onRefusal?.(kind);
    const reason = error instanceof Error ? error.message.slice(0, 200) : String(error);
    if (!this.#episode) {
      this.#episode = { kind, since: now, refusals: 0, reason };
      this.#options.logger.warn({ redis: 'refusing', kind, reason }, 'Redis refusing commands; backing off');
    }
    this.#episode.refusals++;
    if (this.#closed || this.#ended) return;
    this.#round++;
    this.#closed = true;
    this.#timer = setTimeout(() => this.#open(), redisBackoffMs(this.#round, this.#options.random, this.#options.baseMs, this.#options.capMs));
    this.#timer.unref();
  }

  #open(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#closed = false;
    if (this.#episode && !this.#ended) {
      // Ahead of what was held; a refusal of it counts like any other (and closes the gate again).
      this.#options.probe().then(
        () => this.#recovered(),
        // Refused: the gate is closed again (#failed). Lost on the way (a reconnect): probe again after a round.
        (error: unknown) => {
          if (GATED_KINDS.has(redisErrorKind(error)) || this.#closed || this.#ended) return;
          this.#timer = setTimeout(() => this.#open(), redisBackoffMs(this.#round, this.#options.random, this.#options.baseMs, this.#options.capMs));
          this.#timer.unref();
        },
      );
    }
    const held = this.#held;
    this.#held = [];
    for (const send of held) send();
  }
}
