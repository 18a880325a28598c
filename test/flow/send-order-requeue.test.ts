/**
 * The kind "work already placed in the send order is counted again when it goes back on the queue": a send that
 * waits for a slot of its agent (`maxInFlight`) or for an unreachable agent is added again for its next try, and each
 * of those adds took a new place among its tenant's sends (sendOrder-2.lua; a new workflow's first sends take theirs in
 * its create script, createWorkflow-11.lua). A tenant with one send waiting on a busy
 * agent took about one place a second per waiting send, and its fresh sends to healthy agents went behind other
 * tenants' traffic. A next try now keeps the place its send job had (read back from the job's BullMQ priority):
 * the tenant's count grows by its sends, not by its waits. Real Redis, real BullMQ (MONITOR counts the scripts),
 * real HTTP agents; a property of the place's round trip through the job priority.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createProducer } from '@durable-a2a/producer';
import { bullmqSendPriority, placeOfSendPriority, SEND_PRIORITY } from '@durable-a2a/shared';
import { scriptSha } from '../../packages/shared/src/journal/scripts.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { startMonitor, testsOnCluster, useRedisServer } from '../harness/redis.ts';
import { startTaskAgent } from '../harness/task-agent.ts';
import { startDemoAgent } from '../harness/agent.ts';
import { findFreePort } from '../harness/ports.ts';

const redisServer = useRedisServer();
const keep = closeKeptAfterEach();
let counter = 0;

/**
 * Counts, under `prefix`, the calls of the named journal scripts that Redis runs from now on, and as `places` the
 * places taken in the send order (from the tenants' entries the scripts write, includes/sendPlaces.lua: by the create script
 * or by sendOrder-2.lua, whichever takes them).
 */
async function countScripts(prefix: string, names: readonly string[]) {
  const monitor = await startMonitor(redisServer().url);
  keep({ close: async () => monitor.disconnect() });
  const shas = new Map(names.map((name) => [scriptSha(name as never), name]));
  const counts: Record<string, number> = Object.fromEntries([...names, 'places'].map((name) => [name, 0]));
  const taken = new Map<string, number>();
  monitor.on('monitor', (_time: string, args: string[]) => {
    if ((args[0] ?? '').toLowerCase() === 'hset' && args[1] === `${prefix}:{send-order}:clock`) {
      // The tenant's entry `<place>:<sends at it>`: a weight-1 tenant on a clock that stands (a place lasts 60 s) has
      // taken place + sends places in all.
      const at = args.findIndex((arg, index) => index >= 2 && index % 2 === 0 && arg.startsWith('t:'));
      const [place, sends] = (args[at + 1] ?? '0:0').split(':').map(Number);
      counts.places! += place! + sends! - (taken.get(args[at]!) ?? 0);
      taken.set(args[at]!, place! + sends!);
    }
    if ((args[0] ?? '').toLowerCase() !== 'evalsha' || !args.slice(3).some((key) => key.startsWith(`${prefix}:`))) return;
    const name = shas.get(args[1]!);
    if (name) counts[name]!++;
  });
  return counts;
}

describe("a send's next try keeps its place in the send order", () => {
  it('property: the place a send job was added with reads back from its BullMQ priority, at every priority', () => {
    fc.assert(
      fc.property(fc.integer({ min: SEND_PRIORITY.lowest, max: SEND_PRIORITY.highest }), fc.integer({ min: 0, max: 199_998 }), (priority, place) => {
        expect(placeOfSendPriority(bullmqSendPriority(priority, place))).toBe(place);
      }),
    );
    expect(placeOfSendPriority(undefined)).toBeUndefined();
    expect(placeOfSendPriority(0)).toBeUndefined();
  });

  it.skipIf(testsOnCluster())('sends waiting for a slot of a busy agent (maxInFlight 1) are placed once each, however often they wait', async () => {
    const prefix = `requeue-slot-${++counter}`;
    const agent = await startTaskAgent({ taskMs: 50, sendMs: 2_500 });
    keep(agent);
    const counts = await countScripts(prefix, ['sendOrder', 'noteSlotWait']);
    const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    keep(producer);
    await producer.registerAgent(agent.cardUrl);
    await producer.setAgentLimits(agent.cardUrl, { maxInFlight: 1 });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, slotWaitMs: 100 });
    keep(fleet);
    const ids: string[] = [];
    for (let index = 0; index < 3; index++) ids.push((await producer.delegate({ agent: agent.cardUrl, text: `wait ${index}`, idempotencyKey: `${prefix}-${index}` })).id);
    await eventually(async () => counts.noteSlotWait! >= 6, 'the sends waited for the slot several times', 60_000);
    // One place per send, taken when it was delegated; none for a wait.
    expect(counts.places).toBe(3);
    await eventually(async () => (await Promise.all(ids.map((id) => producer.get(id)))).every((view) => view.state === 'COMPLETED'), 'all three COMPLETED', 90_000);
    expect(counts.places).toBe(3);
    expect(counts.sendOrder).toBe(0); // taken by the create script
    expect(agent.maxConcurrentSends()).toBe(1);
  }, 120_000);

  it.skipIf(testsOnCluster())('a send whose agent is unreachable is placed once, however many tries it takes', async () => {
    const prefix = `requeue-down-${++counter}`;
    const port = await findFreePort();
    const cardUrl = `http://127.0.0.1:${port}/.well-known/agent-card.json`;
    const counts = await countScripts(prefix, ['sendOrder', 'noteUnreachable']);
    const producer = createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });
    keep(producer);
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix, unreachableBackoff: { baseMs: 100, capMs: 300 } });
    keep(fleet);
    const { id, messageId } = await producer.delegate({ agent: cardUrl, text: 'when you are back', idempotencyKey: `${prefix}-down` });
    await eventually(async () => counts.noteUnreachable! >= 4, 'the send was tried several times', 60_000);
    expect(counts.places).toBe(1);
    const agent = await startDemoAgent({ port });
    keep(agent);
    expect((await producer.waitFor(id, { timeoutMs: 60_000 })).state).toBe('COMPLETED');
    expect(agent.sendMessageCount(messageId)).toBe(1);
    expect(counts.places).toBe(1);
    expect(counts.sendOrder).toBe(0);
  }, 120_000);
});
