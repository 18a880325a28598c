/**
 * The one map from Redis errors to kinds (redis-errors.ts), over the texts ioredis and BullMQ surface for each
 * kind, whatever follows the reply prefix (a script's sha and line, a key, a node address): unit rows for the
 * exact texts seen from redis-server 7 (and Redis 6's wrapping inside scripts), and properties over generated
 * texts. Also the reconnect rule (READONLY resends, UNBLOCKED reconnects), the jittered backoff's bounds, and
 * the refusal gate's rate bound and once-per-episode log lines over a fake connection.
 */
import { describe, expect, it } from 'vitest';
import { AgentCardError, NetworkError } from '@durable-a2a/a2a';
import fc from 'fast-check';
import { ReplyError } from 'ioredis';
import { RedisRefusalGate, REDIS_REPLY_PREFIXES, reconnectOnRedisError, redisBackoffMs, redisErrorKind, createLogger, type RedisClient, type RedisErrorKind } from '@durable-a2a/shared';

const reply = (text: string) => new ReplyError(text);
const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

/** Texts as redis-server 7.0, ioredis 5 and BullMQ 6 produce them. */
const SEEN: [Error, RedisErrorKind][] = [
  [reply("OOM command not allowed when used memory > 'maxmemory'."), 'refusing-writes'],
  [reply("OOM command not allowed when used memory > 'maxmemory'. script: c1e43c3aa97ad5311d37ce7cb6154c6836988fa3, on @user_script:1."), 'refusing-writes'],
  [reply("READONLY You can't write against a read only replica."), 'refusing-writes'],
  [reply("READONLY You can't write against a read only replica. script: c1e43c3aa97ad5311d37ce7cb6154c6836988fa3, on @user_script:1."), 'refusing-writes'],
  [reply('MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.'), 'refusing-writes'],
  [reply('NOREPLICAS Not enough good replicas to write.'), 'refusing-writes'],
  [reply('UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)'), 'refusing-writes'],
  [reply("ERR Error running script (call to f_c1e4): @user_script:1: @user_script: 1: -OOM command not allowed when used memory > 'maxmemory'."), 'refusing-writes'],
  [reply('ERR Error running script (call to f_c1e4): @user_script:1: -READONLY You can\'t write against a read only replica.'), 'refusing-writes'],
  [new Error("Failed to add repeatable job for next iteration: OOM command not allowed when used memory > 'maxmemory'. script: 4da2, on @user_script:311."), 'refusing-writes'],
  [reply('MOVED 3999 127.0.0.1:6381'), 'moving'],
  [reply('ASK 3999 127.0.0.1:6381'), 'moving'],
  [reply('TRYAGAIN Multiple keys request during rehashing of slot'), 'moving'],
  [reply('CLUSTERDOWN The cluster is down'), 'moving'],
  [new Error('Too many Cluster redirections. Last error: ReplyError: TRYAGAIN Multiple keys request during rehashing of slot'), 'moving'],
  // Seen during a live reshard (cluster-reshard.test.ts): an EVALSHA sent on to the importing master after ASK.
  [new Error('Too many Cluster redirections. Last error: ReplyError: NOSCRIPT No matching script. Please use EVAL.'), 'moving'],
  [new Error('Too many Cluster redirections. Last error: ReplyError: ASK 11627 127.0.0.1:46005'), 'moving'],
  [new Error('Failed to refresh slots cache.'), 'moving'],
  [reply('NOSCRIPT No matching script. Please use EVAL.'), 'script-missing'],
  [new Error('Connection is closed.'), 'unreachable'],
  [Object.assign(new Error('Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.'), { name: 'MaxRetriesPerRequestError' }), 'unreachable'],
  [new Error("Stream isn't writeable and enableOfflineQueue options is false"), 'unreachable'],
  [new Error('Command timed out'), 'unreachable'],
  [withCode('connect ECONNREFUSED 127.0.0.1:6390', 'ECONNREFUSED'), 'unreachable'],
  [withCode('read ECONNRESET', 'ECONNRESET'), 'unreachable'],
  [reply('LOADING Redis is loading the dataset in memory'), 'unreachable'],
  [reply('BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.'), 'unreachable'],
  [reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), 'unreachable'],
  [new Error('All sentinels are unreachable. Retrying from scratch after 10ms.'), 'unreachable'],
  [reply('WRONGTYPE Operation against a key holding the wrong kind of value'), 'other'],
  [reply('ERR Error running script (call to f_c1e4): @user_script:12: user_script:12: attempt to compare nil with number'), 'other'],
  [reply('ERR unknown command'), 'other'],
  [new Error('OOMPH is not a Redis reply'), 'other'],
  [new Error('a delegation named READONLY failed'), 'other'],
];

describe('redisErrorKind', () => {
  it.each(SEEN.map(([error, kind]) => [error.message.slice(0, 60), error, kind] as const))('%s', (_text, error, kind) => {
    expect(redisErrorKind(error)).toBe(kind);
  });

  it('follows the cause chain (a typed error wrapping a Redis error keeps its kind), and never throws on non-errors', () => {
    const wrapped = new Error('journal write failed', { cause: new Error('outer', { cause: reply('NOREPLICAS Not enough good replicas to write.') }) });
    expect(redisErrorKind(wrapped)).toBe('refusing-writes');
    for (const value of [undefined, null, 'OOM', 42, { message: 'OOM command not allowed' }]) expect(redisErrorKind(value)).toBe('other');
  });

  it('an A2A client error is about an agent, never Redis, whatever it wraps (an Agent Card fetch refused is not Redis unreachable)', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(redisErrorKind(refused)).toBe('unreachable');
    expect(redisErrorKind(new NetworkError('agent unreachable', { cause: refused, delivery: 'not-sent' }))).toBe('other');
    expect(redisErrorKind(new AgentCardError('HTTP_STATUS', 'card answered OOM', { cause: reply('OOM command not allowed') }))).toBe('other');
  });

  it('property: every reply prefix gives its kind whatever follows it, bare or wrapped by a Redis 6 script error', () => {
    const prefixes = Object.keys(REDIS_REPLY_PREFIXES);
    fc.assert(
      fc.property(fc.constantFrom(...prefixes), fc.string({ maxLength: 80 }), fc.boolean(), (prefix, rest, wrapped) => {
        const tail = ` ${rest}`;
        const text = wrapped ? `ERR Error running script (call to f_ab12): @user_script:3: -${prefix}${tail}` : `${prefix}${tail}`;
        expect(redisErrorKind(reply(text))).toBe(REDIS_REPLY_PREFIXES[prefix]);
      }),
      { numRuns: 500 },
    );
  });

  it("property: ioredis' exhausted Cluster redirections are moving whatever reply it names last", () => {
    const prefixes = Object.keys(REDIS_REPLY_PREFIXES);
    fc.assert(
      fc.property(fc.constantFrom(...prefixes), fc.string({ maxLength: 80 }), (prefix, rest) => {
        expect(redisErrorKind(new Error(`Too many Cluster redirections. Last error: ReplyError: ${prefix} ${rest}`))).toBe('moving');
      }),
      { numRuns: 200 },
    );
  });

  it('property: a text that starts with no known prefix is never refusing-writes, moving or script-missing', () => {
    const prefixes = Object.keys(REDIS_REPLY_PREFIXES);
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z][A-Za-z ]{0,40}$/), (text) => {
        fc.pre(!prefixes.some((prefix) => new RegExp(`^${prefix}\\b`).test(text)) && !/redirections|slots cache/i.test(text));
        expect(['other', 'unreachable']).toContain(redisErrorKind(reply(text)));
      }),
      { numRuns: 500 },
    );
  });
});

describe('reconnectOnRedisError', () => {
  it('READONLY resends on a new connection (the command did not run); UNBLOCKED reconnects; nothing else does', () => {
    expect(reconnectOnRedisError(reply("READONLY You can't write against a read only replica."))).toBe(2);
    expect(reconnectOnRedisError(reply("READONLY You can't write against a read only replica. script: c1e4, on @user_script:1."))).toBe(2);
    expect(reconnectOnRedisError(reply('UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)'))).toBe(1);
    for (const [error, kind] of SEEN) if (!/^(READONLY|UNBLOCKED)|-READONLY/.test(error.message)) expect(reconnectOnRedisError(error), kind).toBe(false);
  });
});

describe('redisBackoffMs', () => {
  it('property: within [ceiling / 2, ceiling], the ceiling doubling from the base up to the cap', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (round, draw) => {
        const ceiling = Math.min(5_000, 100 * 2 ** (round - 1));
        const delay = redisBackoffMs(round, () => draw);
        expect(delay).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
        expect(delay).toBeLessThanOrEqual(ceiling);
      }),
    );
  });
});

/** A stand-in connection whose commands Redis answers with `answer(name)` after a turn. */
function fakeConnection(answer: (name: string) => Error | 'OK') {
  const sent: string[] = [];
  const client = {
    sendCommand(command: { name: string; resolve(value: unknown): void; reject(error: Error): void; promise: Promise<unknown> }) {
      sent.push(command.name);
      setImmediate(() => {
        const result = answer(command.name);
        if (result === 'OK') command.resolve('OK');
        else command.reject(result);
      });
      return command.promise;
    },
  };
  const send = (name: string) => {
    let resolve!: (value: unknown) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise((ok, fail) => ((resolve = ok), (reject = fail)));
    return (client.sendCommand as (command: unknown) => Promise<unknown>)({ name, resolve, reject, promise });
  };
  return { client: client as unknown as RedisClient, sent, send };
}

describe('RedisRefusalGate', () => {
  it('a caller that retries a refused command at once is held to one command per backoff round; one line per episode', async () => {
    let refusing = true;
    // Reads are answered while writes are refused: only the probe's SET proves the episode over.
    const connection = fakeConnection((name) => (refusing && (name === 'evalsha' || name === 'set') ? reply("OOM command not allowed when used memory > 'maxmemory'.") : 'OK'));
    const lines: { msg: string; kind?: string }[] = [];
    const logger = createLogger({ level: 'info' });
    for (const level of ['warn', 'info'] as const) logger[level] = ((fields: { kind?: string }, msg: string) => void lines.push({ ...fields, msg })) as never;
    const gate = new RedisRefusalGate({ logger, baseMs: 20, capMs: 40, probe: () => connection.send('set') });
    gate.guard(connection.client);
    const started = Date.now();
    // A hot loop like BullMQ's fetch on a refused script: send again as soon as the answer comes.
    while (Date.now() - started < 400) {
      await connection.send('evalsha').catch(() => undefined);
      await connection.send('get');
    }
    const elapsed = Date.now() - started;
    // Without the gate this loop sends two commands per event-loop turn (thousands in 400 ms); with it, each
    // round (at least 10 ms) lets through the held command, the probe and the read after it.
    expect(connection.sent.length).toBeLessThanOrEqual(3 * (Math.ceil(elapsed / 10) + 2));
    expect(lines.filter((line) => line.msg.startsWith('Redis refusing'))).toHaveLength(1);
    refusing = false;
    const recoveredBy = Date.now();
    while (!lines.some((line) => line.msg.startsWith('Redis taking')) && Date.now() - recoveredBy < 2_000) await connection.send('get');
    expect(lines.map((line) => line.msg)).toEqual(['Redis refusing commands; backing off', 'Redis taking commands again']);
    expect(gate.episode).toBeUndefined();
  });

  it('keeps the order of held commands and sends each once; end() releases what it holds', async () => {
    const connection = fakeConnection((name) => (name === 'first' ? reply('READONLY You can\'t write against a read only replica.') : 'OK'));
    const gate = new RedisRefusalGate({ logger: createLogger({ level: 'silent' }), baseMs: 60_000, capMs: 60_000, probe: () => connection.send('probe') });
    gate.guard(connection.client);
    await connection.send('first').catch(() => undefined);
    const held = ['multi', 'set', 'exec'].map((name) => connection.send(name));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(connection.sent).toEqual(['first']);
    gate.end();
    await Promise.all(held);
    expect(connection.sent).toEqual(['first', 'multi', 'set', 'exec']);
    expect(gate.episode).toMatchObject({ kind: 'refusing-writes', refusals: 1 });
  });
});
