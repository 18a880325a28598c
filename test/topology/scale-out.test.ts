/**
 * Scale-out with no leader: three worker processes share the queues and the
 * reconciler's duty. One of them is SIGKILLed while ~30 workflows are in
 * flight (single delegations to a slow agent, and travel sagas with a
 * question, verification and compensation); the two survivors take over its
 * jobs (BullMQ stalled-job check) and its streams (reconcile sweep), and
 * nothing is lost or sent twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { useRedisServer } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { runsSlowly } from '../harness/agent-behaviours.ts';
import { eventually, spawnWorkerProcess, type WorkerProcess } from '../harness/fleet.ts';
import { deliveriesOf, duplicateDeliveries, settleWorkflow, stuckIndexEntries, summary } from '../harness/invariants.ts';
import { startTravelCast, travelWorkflow, type TravelCast } from '../harness/travel.ts';

const DELEGATIONS = 24;
const TRIPS = 6;

const redisServer = useRedisServer({ appendOnly: true });
let agent: DemoAgentHandle;
let cast: TravelCast;
let producer: Producer;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  agent = await startDemoAgent({ name: 'slow agent', behaviour: runsSlowly(1_200) });
  cast = await startTravelCast();
  producer = createProducer({ redis: redisServer().url, addressPolicy: { allowLoopback: true }, prefix: 'scale' });
  for (const member of [cast.flight, cast.hotel, cast.car1, cast.car2]) await producer.registerAgent(member.cardUrl);
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.kill()));
  await producer?.close();
  await Promise.all([agent?.close(), cast?.close()]);
});

describe('scale-out: three workers, no leader', () => {
  it('one of three workers is SIGKILLed mid-way: every workflow finishes, each message executed once, index drained', async () => {
    const verifiers = JSON.stringify({ booking: { urlTemplate: `${cast.bookings.url}/bookings/{subjectMessageId}`, effectField: 'status', presentValues: ['booked'] } });
    for (let index = 0; index < 3; index++) {
      workers.push(spawnWorkerProcess({ REDIS_URL: redisServer().url, DA2A_PREFIX: 'scale', DA2A_HTTP_VERIFIERS: verifiers, DA2A_CONCURRENCY: 'send=5' }));
    }
    await Promise.all(workers.map((worker) => worker.ready));

    const delegations = await Promise.all(
      Array.from({ length: DELEGATIONS }, (_, index) => producer.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `job-${index}` })),
    );
    const trips = await Promise.all(Array.from({ length: TRIPS }, (_, index) => producer.startWorkflow(travelWorkflow(`trip-${index}`))));
    const ids = [...delegations.map(({ id }) => id), ...trips.map(({ id }) => id)];
    // Mid-way: some delegations are at the agent, most are not finished.
    await eventually(async () => delegations.filter(({ messageId }) => agent.sendMessageCount(messageId) > 0).length >= DELEGATIONS / 3, 'a third of the delegations sent');
    const victim = workers[1]!;
    await victim.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');

    const views = await Promise.all(ids.map((id) => settleWorkflow(producer, id, 45_000)));
    for (const view of views.slice(0, DELEGATIONS)) expect(view.state, JSON.stringify(summary(view))).toBe('COMPLETED');
    for (const view of views.slice(DELEGATIONS)) expect(view.state, JSON.stringify(summary(view))).toBe('COMPENSATED');
    expect(duplicateDeliveries(views.flatMap(deliveriesOf), [agent, cast.flight, cast.hotel, cast.car1, cast.car2])).toEqual([]);
    for (const { messageId } of delegations) expect(agent.sendMessageCount(messageId)).toBe(1);
    const cancels = cast.bookings.counts().cancels;
    expect([...cancels.values()].every((count) => count === 1)).toBe(true);
    expect(cancels.size).toBe(TRIPS * 2);
    await expect.poll(() => stuckIndexEntries(producer), { timeout: 15_000 }).toEqual([]);
  });
});
