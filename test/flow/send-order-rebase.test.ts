/**
 * The send order's clock rebased (rebaseSendOrder-1.lua, keepSendPlace-1.lua, docs/flow-control.md "Tenants"): the
 * clock only grew, so a fleet in steady use reached the priority band's end after about 139 days (200,000 places of
 * 60 s) and from then on every place was the band's end: first in, first out, the fairness between tenants gone for
 * good. What must hold now: the workers' timer sweep takes the clock back to place 0 once it is past a quarter of the
 * band and the send queue holds no job (never while one is waiting, delayed or running, nor while a send was placed
 * moments ago), once however many workers try; a next try whose place is from before a rebase goes at the clock's
 * place, not behind every send placed since; and over interleavings of adds, tries, held sends and rebases no send
 * waits behind more than a bounded number of sends enqueued after it, nor ahead of it. Real Redis, real BullMQ.
 */
import fc from 'fast-check';
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { FairSendQueue, SEND_ORDER_REBASE_QUIET_MS, SendOrder, enqueueSendTry, journalKeys, placeOfSendPriority } from '@durable-a2a/shared';
import { useRedisServer } from '../harness/redis.ts';
import { closedAtEnd, redisNow } from '../harness/send-order.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
let counter = 0;
const connect = (): Redis => closedAtEnd(new Redis(redisServer().url, { maxRetriesPerRequest: null }));

/** A clock near the band's end, as a fleet 130 days in steady use has it: last place given a minute ago. */
async function clockNearBandEnd(redis: Redis, prefix: string, place = 190_000): Promise<string> {
  const { clock } = journalKeys(prefix).sendOrder();
  const now = await redisNow(redis);
  await redis.hset(clock, 'v', String(place), 'ms', String(now), 'at', String(now - 60_000), 't:busy', `${place + 9_000}:1`, 't:quiet', `${place}:1`);
  return clock;
}

function fairQueue(prefix: string) {
  const redis = connect();
  const connection = { connection: redis, prefix: `{${prefix}}` };
  const queue = closedAtEnd(new FairSendQueue('send', connection, new SendOrder(redis, prefix)));
  return { redis, connection, queue };
}

describe('the workers rebase the clock', () => {
  it("a clock near the band's end and an idle send queue: the fleet's timer sweep takes it back to 0, and new sends take low places again", async () => {
    const prefix = `order-rebase-fleet-${++counter}`;
    const redis = connect();
    const clock = await clockNearBandEnd(redis, prefix);
    // Before: every tenant's place is near the band's end (199,998 is its last).
    expect(await new SendOrder(redis, prefix).place('fresh')).toBe(190_000);
    await redis.hset(clock, 'at', String((await redisNow(redis)) - 60_000));
    closedAtEnd(await startTestFleet({ redisUrl: redisServer().url, prefix }));
    await eventually(async () => (await redis.hget(clock, 'v')) === '0', 'the timer sweep rebased the clock', 30_000, 50);
    expect(await redis.hexists(clock, 't:busy')).toBe(0);
    const order = new SendOrder(redis, prefix);
    expect(await order.place('busy')).toBeLessThanOrEqual(1);
    expect(await order.place('fresh')).toBeLessThanOrEqual(1);
  }, 60_000);
});

describe('when a rebase is refused', () => {
  it('a message send waiting (prioritized), delayed, or running (active), or a reply waiting: not rebased; idle: rebased once of five workers at once', async () => {
    const prefix = `order-rebase-busy-${++counter}`;
    const { redis, connection, queue } = fairQueue(prefix);
    const clock = await clockNearBandEnd(redis, prefix);
    const setAt = async () => redis.hset(clock, 'at', String((await redisNow(redis)) - 60_000));
    // Delayed.
    const delayed = await queue.add('send', { kind: 'message', tenant: 'a' }, { delay: 600_000 });
    await setAt();
    expect(await queue.rebaseOrderWhenIdle()).toBe('busy');
    await delayed.remove();
    // Prioritized (waiting).
    await queue.pause();
    const waiting = await queue.add('send', { kind: 'message', tenant: 'a' });
    await setAt();
    expect(await queue.rebaseOrderWhenIdle()).toBe('busy');
    // Active: fetched by a worker, not finished.
    await queue.resume();
    const worker = closedAtEnd(new Worker('send', null, { ...connection, connection: connect(), lockDuration: 60_000 }));
    const job = (await worker.getNextJob('token-1', { block: false })) as Job | undefined;
    expect(job?.id).toBe(waiting.id);
    expect(await queue.getJobCounts('active', 'prioritized')).toEqual({ active: 1, prioritized: 0 });
    expect(await queue.rebaseOrderWhenIdle()).toBe('busy');
    await job!.moveToCompleted('done', 'token-1', false);
    // A reply (no priority: waiting).
    await queue.pause();
    const reply = await queue.add('send', { kind: 'reply', tenant: 'a' });
    expect(await queue.rebaseOrderWhenIdle()).toBe('busy');
    await reply.remove();
    expect(await redis.hget(clock, 'v')).toBe('190000');
    // A send placed moments ago (its job perhaps not added yet): not rebased.
    await new SendOrder(redis, prefix).place('a');
    expect(await queue.rebaseOrderWhenIdle()).toBe('recent');
    expect(await redis.hget(clock, 'v')).toBe('190000');
    // Idle and quiet: five workers at once, one rebase (compare-and-set on the clock).
    await setAt();
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => queue.rebaseOrderWhenIdle()));
    expect(outcomes.filter((outcome) => outcome === 'rebased')).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome !== 'rebased')).toEqual(['not-due', 'not-due', 'not-due', 'not-due']);
    expect(await redis.hget(clock, 'v')).toBe('0');
  }, 60_000);

  it('a clock before a quarter of the band is not rebased, however idle (a rebase forgives every lead: about monthly, not at every idle moment)', async () => {
    const prefix = `order-rebase-early-${++counter}`;
    const { redis, queue } = fairQueue(prefix);
    const clock = await clockNearBandEnd(redis, prefix, 49_999);
    expect(await queue.rebaseOrderWhenIdle()).toBe('not-due');
    expect(await redis.hget(clock, 't:busy')).toBe('58999:1');
  });
});

describe('a next try after a rebase', () => {
  it('a try added at its job\'s place from before the rebase goes at the clock\'s place: not behind the sends placed since', async () => {
    const prefix = `order-rebase-try-${++counter}`;
    const { redis, connection, queue } = fairQueue(prefix);
    const { clock } = journalKeys(prefix).sendOrder();
    // Just rebased: the clock at 0. A send of tenant `a` placed before it (place 190,000), its try added after.
    await redis.hset(clock, 'v', '0', 'ms', String(await redisNow(redis)));
    await queue.pause();
    for (let index = 0; index < 30; index++) await queue.add('send', { kind: 'message', tenant: 'b', index });
    const ref = { workflowId: 'a~wf-old', delegationId: 'd1' };
    await enqueueSendTry({ send: queue }, ref, 0, Date.now(), 0, { tenant: 'a', place: 190_000 });
    const served: string[] = [];
    closedAtEnd(new Worker('send', async (job) => void served.push(job.data.tenant === 'a' ? 'a try' : `b ${job.data.index}`), { ...connection, connection: connect(), concurrency: 1 }));
    await queue.resume();
    await eventually(async () => served.length === 31, '31 sends served', 30_000, 20);
    expect(served.indexOf('a try'), served.join(', ')).toBeLessThanOrEqual(1);
  }, 60_000);

  it('a try at a place of this run of the clock keeps it (a try is not a new send of its tenant)', async () => {
    const prefix = `order-rebase-keep-${++counter}`;
    const { redis } = fairQueue(prefix);
    const order = new SendOrder(redis, prefix);
    await clockNearBandEnd(redis, prefix, 1_000);
    expect(await order.keep(1_500)).toBe(1_500);
    expect(await order.keep(21_000)).toBe(21_000);
    expect(await order.keep(21_001)).toBe(1_000);
    expect(() => order.keep(-1)).toThrow(RangeError);
    expect(() => order.keep(1.5)).toThrow(RangeError);
  });
});

type Tenant = 'a' | 'b' | 'c';
/**
 * One job in the property's queue: when it was added and taken (one counter for both), its tenant, and the sends its
 * tenant placed before it in this run of the clock (a try: its send's).
 */
interface Added {
  addedAt: number;
  takenAt?: number;
  tenant: Tenant;
  lead: number;
  kind: 'send' | 'try' | 'held';
}

describe('property: adds, tries, held sends and rebases interleaved', () => {
  it('no send waits behind more than a bounded number of sends enqueued after it, nor behind more than a bounded number of other tenants\' sends enqueued before it', async () => {
    const tenant = fc.constantFrom<Tenant>('a', 'b', 'c');
    const step = fc.oneof(
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('add' as const), tenant, count: fc.integer({ min: 1, max: 4 }) }) },
      // A send placed now, its job added later (between its place and its add: another process's event loop).
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('hold' as const), tenant }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const) }) },
      // A worker takes the next job: done, its next try added now (before it finishes, as the send processor does), or
      // its try added later (a try whose add is late: a lost job the reconciler enqueues again at its place).
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('serve' as const), count: fc.integer({ min: 1, max: 3 }), then: fc.constantFrom('done', 'try', 'try-later') }) },
      // Every job waiting served (the queue idle, but for what is held or late).
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('serve' as const), count: fc.constant(200), then: fc.constantFrom('done', 'try-later') }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('rebase' as const) }) },
    );
    const redis = connect();
    // Often a drain with every try late, then a sweep, in the middle: a rebase with tries still to be added.
    const drainThenSweep = [{ kind: 'serve' as const, count: 200, then: 'try-later' as const }, { kind: 'rebase' as const }];
    const steps = fc
      .tuple(fc.array(step, { maxLength: 15 }), fc.boolean(), fc.array(step, { minLength: 1, maxLength: 25 }))
      .map(([before, drain, after]) => [...before, ...(drain ? drainThenSweep : []), ...after]);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(0, 49_999, 60_000, 150_000, 179_990), steps, async (start, steps) => {
        const prefix = `order-rebase-property-${++counter}`;
        const connection = { connection: redis, prefix: `{${prefix}}` };
        const order = new SendOrder(redis, prefix);
        const queue = new FairSendQueue('send', connection, order);
        const workerRedis = redis.duplicate({ maxRetriesPerRequest: null });
        const worker = new Worker('send', null, { ...connection, connection: workerRedis, lockDuration: 60_000 });
        try {
          const now = await redisNow(redis);
          await redis.hset(journalKeys(prefix).sendOrder().clock, 'v', String(start), 'ms', String(now), 'at', String(now - 60_000));
          let tick = 0;
          const added = new Map<string, Added>();
          /** Sends each tenant placed in this run of the clock (a rebase starts a new run). */
          const placedInRun: Record<Tenant, number> = { a: 0, b: 0, c: 0 };
          const held: { tenant: Tenant; place: number; lead: number }[] = [];
          const lateTries: { tenant: Tenant; place: number; lead: number }[] = [];
          const add = async (data: { tenant: Tenant }, kind: Added['kind'], lead: number, options: { place?: number; keptPlace?: number }) => {
            const job = await queue.add('send', { kind: 'message', tenant: data.tenant }, options);
            added.set(job.id!, { addedAt: tick++, tenant: data.tenant, lead, kind });
          };
          const release = async () => {
            for (const send of held.splice(0)) await add(send, 'held', send.lead, { place: send.place });
            for (const again of lateTries.splice(0)) await add(again, 'try', again.lead, { keptPlace: again.place });
          };
          const serve = async (then: 'done' | 'try' | 'try-later'): Promise<boolean> => {
            const job = (await worker.getNextJob('token', { block: false })) as Job | undefined;
            if (!job) return false;
            const mine = added.get(job.id!)!;
            mine.takenAt = tick++;
            const place = placeOfSendPriority(job.opts.priority)!;
            const again = { tenant: mine.tenant, place, lead: mine.lead };
            if (then === 'try') await add(again, 'try', again.lead, { keptPlace: place });
            if (then === 'try-later') lateTries.push(again);
            await job.moveToCompleted('done', 'token', false);
            return true;
          };
          for (const s of steps) {
            if (s.kind === 'add') {
              for (let index = 0; index < s.count; index++) await add(s, 'send', placedInRun[s.tenant]++, {});
            } else if (s.kind === 'hold') {
              held.push({ tenant: s.tenant, place: await order.place(s.tenant), lead: placedInRun[s.tenant]++ });
            } else if (s.kind === 'release') {
              await release();
            } else if (s.kind === 'serve') {
              for (let index = 0; index < s.count; index++) if (!(await serve(s.then))) break;
            } else {
              // The timer sweep. Time goes by between sweeps (no quiet time asked) unless a send is held between its
              // place and its add: that hold is shorter than the quiet time (a longer one is the documented residue).
              const outcome = await queue.rebaseOrderWhenIdle(held.length > 0 ? SEND_ORDER_REBASE_QUIET_MS : 0);
              if (outcome === 'rebased') for (const name of ['a', 'b', 'c'] as const) placedInRun[name] = 0;
            }
          }
          await release();
          for (let index = 0; index < 500 && (await serve('done')); index++);
          const jobs = [...added.values()];
          expect(jobs.filter((job) => job.takenAt === undefined)).toEqual([]);
          const trace = JSON.stringify({ start, steps });
          for (const job of jobs) {
            // New sends taken while it waited: each other tenant's go at places from the clock's on, one a place (weight
            // 1), so at most its `lead` + 1 of them are before its place or at it (+ 2: the clock may move a place or two
            // meanwhile). Tries and held sends go at the places they were given, so only new sends are counted.
            const newTakenMeanwhile = jobs.filter((other) => other.kind === 'send' && other.takenAt! > job.addedAt && other.takenAt! < job.takenAt!);
            const bound = 2 * (job.lead + 3);
            // Added after it, taken before it.
            const passedBy = newTakenMeanwhile.filter((other) => other.addedAt > job.addedAt).length;
            expect(passedBy, `passed by: ${JSON.stringify(job)} ${trace}`).toBeLessThanOrEqual(bound);
            // Other tenants' waiting when it was added, taken before it (the fairness: not behind another's backlog).
            const ahead = newTakenMeanwhile.filter((other) => other.addedAt < job.addedAt && other.tenant !== job.tenant).length;
            expect(ahead, `ahead: ${JSON.stringify(job)} ${trace}`).toBeLessThanOrEqual(bound);
          }
        } finally {
          await worker.close();
          await queue.obliterate({ force: true }).catch(() => undefined);
          await queue.close();
          await workerRedis.quit().catch(() => undefined);
        }
      }),
      { numRuns: 150, seed: 6_607 },
    );
  }, 300_000);
});
