/**
 * `batchWritesPerTurn`: the commands a client sends in one event-loop turn leave in one socket write, with the same
 * replies in the same order as a plain client's; commands of later turns, commands queued before the connection was
 * ready and a subscriber's SUBSCRIBE / UNSUBSCRIBE work as before. Real Redis; writes are counted on the socket.
 */
import type { Socket } from 'node:net';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchWritesPerTurn } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
let plain: Redis;
let counter = 0;

beforeAll(() => {
  plain = new Redis(redisServer().url);
});
afterAll(() => plain.disconnect());

/** Counts the socket writes (system calls) of `client`'s current connection. */
function countWrites(client: Redis): () => number {
  const socket = client.stream as Socket & { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void };
  let writes = 0;
  for (const name of ['_write', '_writev'] as const) {
    const original = socket[name].bind(socket);
    socket[name] = (...args: unknown[]) => {
      writes++;
      original(...args);
    };
  }
  return () => writes;
}

async function readyClient(batched: boolean): Promise<Redis> {
  const client = new Redis(redisServer().url);
  if (batched) batchWritesPerTurn(client);
  await new Promise<void>((resolve) => client.once('ready', () => resolve()));
  return client;
}

describe('batchWritesPerTurn', () => {
  it('sends the commands of one turn in one socket write, each with its own reply', async () => {
    const key = `batch${counter++}`;
    for (const batched of [false, true]) {
      const client = await readyClient(batched);
      const writes = countWrites(client);
      const replies = await Promise.all(Array.from({ length: 10 }, (_, index) => client.incrby(`${key}:${batched}`, index)));
      expect(replies).toEqual([0, 1, 3, 6, 10, 15, 21, 28, 36, 45]);
      expect(writes()).toBe(batched ? 1 : 10);
      client.disconnect();
    }
  });

  it('writes each later turn at once: a command sent after awaiting a reply is answered', async () => {
    const client = await readyClient(true);
    const writes = countWrites(client);
    const key = `turns${counter++}`;
    for (let index = 1; index <= 5; index++) expect(await client.incr(key)).toBe(index);
    expect(writes()).toBe(5);
    client.disconnect();
  });

  it('answers the commands sent before the connection was ready (offline queue)', async () => {
    const client = batchWritesPerTurn(new Redis(redisServer().url));
    const key = `early${counter++}`;
    expect(await Promise.all([client.set(key, 'a'), client.append(key, 'b'), client.get(key)])).toEqual(['OK', 2, 'ab']);
    client.disconnect();
  });

  it('batches a subscriber connection: SUBSCRIBEs of one turn in one write, messages delivered, UNSUBSCRIBE honoured', async () => {
    const subscriber = await readyClient(true);
    const writes = countWrites(subscriber);
    const channels = Array.from({ length: 4 }, (_, index) => `changes${counter}:${index}`);
    counter++;
    const received: string[] = [];
    subscriber.on('message', (channel: string, message: string) => received.push(`${channel}=${message}`));
    await Promise.all(channels.map((channel) => subscriber.subscribe(channel)));
    expect(writes()).toBe(1);
    for (const channel of channels) expect(await plain.publish(channel, 'x')).toBe(1);
    await expect.poll(() => received.length, { timeout: 5_000 }).toBe(channels.length);
    expect(received.sort()).toEqual(channels.map((channel) => `${channel}=x`).sort());
    await Promise.all(channels.map((channel) => subscriber.unsubscribe(channel)));
    for (const channel of channels) expect(await plain.publish(channel, 'y')).toBe(0);
    subscriber.disconnect();
  });

  it('property: any commands split into any turns get the replies a plain client gets, in order', async () => {
    const batched = await readyClient(true);
    const command = fc.oneof(
      fc.record({ kind: fc.constant('incrby' as const), by: fc.integer({ min: -5, max: 5 }) }),
      fc.record({ kind: fc.constant('append' as const), text: fc.string({ maxLength: 3 }) }),
      fc.record({ kind: fc.constant('get' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(command, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }), async (turns) => {
        const run = async (client: Redis, prefix: string) => {
          const replies: unknown[] = [];
          for (const turn of turns) {
            const sent = turn.map((each) => {
              if (each.kind === 'incrby') return client.incrby(`${prefix}:n`, each.by);
              if (each.kind === 'append') return client.append(`${prefix}:s`, each.text);
              return client.get(`${prefix}:n`);
            });
            replies.push(...(await Promise.all(sent)));
          }
          return replies;
        };
        const id = counter++;
        expect(await run(batched, `p${id}:batched`)).toEqual(await run(plain, `p${id}:plain`));
      }),
      { numRuns: 30 },
    );
    batched.disconnect();
  });
});
