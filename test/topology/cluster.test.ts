/**
 * Redis Cluster, always (whatever DA2A_TEST_REDIS says): a local three-master
 * cluster, the producer and an in-process fleet on a `redis-cluster://` URL,
 * 20 delegations and one travel saga with a question, verification and
 * compensation. Every journal script names keys of one workflow only (hash
 * tag `{wf:<id>}`) and the queues share the `{…}` prefix tag, so nothing may
 * fail with CROSSSLOT; the workflows spread over all three masters.
 */
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { createRedisClient } from '@durable-a2a/shared';
import type { Fleet } from '@durable-a2a/workers';
import { startRedisCluster, type RedisClusterHandle } from '../harness/redis-cluster.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { completesWith } from '../harness/agent-behaviours.ts';
import { startTestFleet } from '../harness/fleet.ts';
import { deliveriesOf, duplicateDeliveries, settleWorkflow, stuckIndexEntries, summary } from '../harness/invariants.ts';
import { bookingVerifier, startTravelCast, travelWorkflow, type TravelCast } from '../harness/travel.ts';
import { captureLogs } from '../harness/log-capture.ts';

let cluster: RedisClusterHandle;
let agent: DemoAgentHandle;
let cast: TravelCast;
let producer: Producer;
let fleet: Fleet;
/** Every warning and error of the fleet, to look for CROSSSLOT afterwards. */
const logs = captureLogs({ level: 'warn' });

beforeAll(async () => {
  cluster = await startRedisCluster();
  agent = await startDemoAgent({ behaviour: completesWith('done', { delayMs: 50 }) });
  cast = await startTravelCast();
  producer = createProducer({ redis: cluster.url, addressPolicy: { allowLoopback: true }, prefix: 'clu' });
  for (const member of [cast.flight, cast.hotel, cast.car1, cast.car2]) await producer.registerAgent(member.cardUrl);
  fleet = await startTestFleet({
    redisUrl: cluster.url,
    prefix: 'clu',
    logger: logs.logger,
    metricsRegistry: new Registry(),
    verifiers: { booking: bookingVerifier(cast.bookings.url) },
  });
});
afterAll(async () => {
  await fleet?.close();
  await producer?.close();
  await Promise.all([agent?.close(), cast?.close()]);
  await cluster?.stop();
});

describe('Redis Cluster (three masters)', () => {
  it('20 delegations and a compensated travel saga: all finished, sent once, no CROSSSLOT, spread over the masters', async () => {
    const delegations = await Promise.all(
      Array.from({ length: 20 }, (_, index) => producer.delegate({ agent: agent.cardUrl, text: `job ${index}`, idempotencyKey: `cluster-${index}` })),
    );
    const { id: tripId } = await producer.startWorkflow(travelWorkflow('cluster-trip'));
    const views = await Promise.all([...delegations.map(({ id }) => settleWorkflow(producer, id, 30_000)), settleWorkflow(producer, tripId, 40_000)]);
    for (const view of views.slice(0, 20)) expect(view.state).toBe('COMPLETED');
    const trip = views[20]!;
    expect(trip.state, JSON.stringify(summary(trip))).toBe('COMPENSATED');
    const flight = trip.steps.find((step) => step.name === 'flight')!.attempts[0]!;
    const hotel = trip.steps.find((step) => step.name === 'hotel')!.attempts[0]!;
    expect(cast.bookings.cancelOrder).toEqual([hotel.messageId, flight.messageId]);
    expect(duplicateDeliveries(views.flatMap(deliveriesOf), [agent, cast.flight, cast.hotel, cast.car1, cast.car2])).toEqual([]);
    await expect.poll(() => stuckIndexEntries(producer), { timeout: 10_000 }).toEqual([]);
    expect(logs.rawLines.filter((line) => /CROSSSLOT|MOVED|ASK /i.test(line))).toEqual([]);

    // Each workflow's keys share one slot; the workflows themselves spread over the masters.
    const client = createRedisClient(cluster.url);
    try {
      const slots = new Set<number>();
      for (const view of views) {
        const keys = [
          producer.journal.keys.workflow(view.workflowId),
          producer.journal.keys.finished(view.workflowId),
          ...view.steps.flatMap((step) => [...step.attempts, ...step.compensations]).map((attempt) => producer.journal.keys.delegation(view.workflowId, attempt.delegationId)),
        ];
        const keySlots = new Set(await Promise.all(keys.map(async (key) => Number(await client.call('CLUSTER', 'KEYSLOT', key)))));
        expect(keySlots.size, `slots of ${view.workflowId}`).toBe(1);
        slots.add([...keySlots][0]!);
      }
      const owners = new Set<string>();
      const ranges = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      for (const slot of slots) {
        const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
        owners.add(String(owner?.[2][1]));
      }
      expect(owners.size).toBe(3);
    } finally {
      await client.quit();
    }
  });
});
