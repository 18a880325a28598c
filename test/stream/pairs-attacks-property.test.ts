/**
 * Property (scripted raw SSE agent, real fleet, private redis-server): whatever interleaving of artifact updates (new,
 * appended, sealed, appended after the seal), WORKING status updates, Task snapshots (with or without artifacts),
 * keep-alive comments, garbage (not JSON, not a StreamResponse), a foreign task's events and COMPLETED an agent writes,
 * however its bytes are cut into reads, the attempt ends as the same events applied one by one through the journal
 * (`oneByOne`: up to the first protocol error or finished row, then the agent's GetTask answer): one SendMessage, at most
 * one GetTask, the follow lease given back, no unhandled rejection. Bounded: 80 runs or 90 s.
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testsOnCluster, useRedisClient, useRedisServer } from '../harness/redis.ts';
import { AU, SU, ev, task, type SseWait } from '../harness/scripted-agent.ts';
import { PairRig, frame, oneByOne, type Ids } from '../harness/stream-pairs.ts';

const redisServer = useRedisServer();
const redis = useRedisClient<Redis>(redisServer);

type Event =
  | { kind: 'artifact'; artifactId: 'a1' | 'a2'; append: boolean; lastChunk: boolean }
  | { kind: 'working' | 'completed' | 'snapshot' | 'snapshot-with-artifacts' | 'keep-alive' | 'not-json' | 'not-a-response' | 'foreign-status' | 'foreign-artifact' };

const eventArbitrary: fc.Arbitrary<Event> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('artifact' as const), artifactId: fc.constantFrom('a1' as const, 'a2' as const), append: fc.boolean(), lastChunk: fc.boolean() }) },
  { weight: 5, arbitrary: fc.constant({ kind: 'working' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'completed' as const }) },
  { weight: 1, arbitrary: fc.constantFrom(...(['snapshot', 'snapshot-with-artifacts', 'keep-alive', 'not-json', 'not-a-response', 'foreign-status', 'foreign-artifact'] as const).map((kind) => ({ kind }))) },
);

/** An event's data (a JSON-RPC envelope, or what an agent put there instead); undefined for a comment line. */
function payloadOf(event: Event, index: number, ids: Ids): string | undefined {
  const foreign = { taskId: `${ids.taskId}-other`, contextId: ids.contextId };
  switch (event.kind) {
    case 'artifact':
      return AU(event.artifactId, event.append, event.lastChunk, `p${index} `, ids);
    case 'working':
    case 'completed': {
      // A message per event: a status lost or applied twice shows in the journal's status message.
      const message = { messageId: `s${index}`, role: 'ROLE_AGENT', parts: [{ text: `${event.kind} ${index}` }] };
      return SU(event.kind === 'working' ? 'WORKING' : 'COMPLETED', { ...ids, message });
    }
    case 'snapshot':
    case 'snapshot-with-artifacts': {
      const artifacts = event.kind === 'snapshot' ? {} : { artifacts: { s1: `snap${index}` } };
      return JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: task(ids.taskId, 'WORKING', { contextId: ids.contextId, ...artifacts }) } });
    }
    case 'keep-alive':
      return undefined;
    case 'not-json':
      return '{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":';
    case 'not-a-response':
      return JSON.stringify({ jsonrpc: '2.0', id: 1, result: { bogus: { taskId: ids.taskId } } });
    case 'foreign-status':
      return SU('COMPLETED', foreign);
    case 'foreign-artifact':
      return AU('a1', false, true, `foreign${index}`, foreign);
  }
}

const bytesOf = (events: Event[], ids: Ids) => events.map((event, index) => payloadOf(event, index, ids)).map((payload) => (payload === undefined ? ': keep-alive\n\n' : ev(payload))).join('');

const scenario = fc.record({
  events: fc.array(eventArbitrary, { minLength: 1, maxLength: 10 }),
  /** Where the bytes are cut into reads, as fractions of their length, and the pause after each cut (ms). */
  cuts: fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 0, max: 3 })), { maxLength: 6 }),
});

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => void unhandled.push(reason);
beforeAll(() => void process.on('unhandledRejection', onUnhandled));
afterAll(() => void process.off('unhandledRejection', onUnhandled));

describe.skipIf(testsOnCluster())('random interleavings and chunkings of a stream (property, end to end)', () => {
  let rig: PairRig;
  beforeAll(async () => {
    rig = await PairRig.start(redisServer().url, 'asp-fuzz');
  });
  afterAll(() => rig?.close());

  it('the attempt ends as the events applied one by one; one SendMessage, at most one GetTask, the lease given back', async () => {
    let runs = 0;
    let paired = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async ({ events, cuts }) => {
        const story = (ids: Ids) => {
          const bytes = frame(bytesOf(events, ids), ids);
          const at = [...new Set(cuts.map(([fraction, waitMs]) => [Math.floor(fraction * bytes.length), waitMs] as const).filter(([cut]) => cut > 0 && cut < bytes.length).map(([cut, waitMs]) => `${cut}:${waitMs}`))]
            .map((entry) => entry.split(':').map(Number) as [number, number])
            .sort((a, b) => a[0] - b[0]);
          const sse: (string | SseWait)[] = [];
          let from = 0;
          for (const [cut, waitMs] of at) {
            if (cut <= from) continue;
            sse.push(bytes.slice(from, cut), { waitMs });
            from = cut;
          }
          sse.push(bytes.slice(from));
          return { sse, endAfter: 'close' as const };
        };
        const outcome = await rig.run(`fuzz-${++runs}`, story, (view) => view.state === 'COMPLETED' || view.state === 'FAILED');
        const expected = await oneByOne(redis(), (ids) => events.map((event, index) => payloadOf(event, index, ids)).filter((payload) => payload !== undefined), { readAtEnd: true });
        const told = JSON.stringify({ events, cuts });
        expect(outcome.normal, told).toEqual(expected);
        expect(outcome.sendMessages, told).toBe(1);
        expect(outcome.getTasks, told).toBeLessThanOrEqual(1);
        expect(outcome.leaseHeld, told).toBe(false);
        paired += outcome.calls.applyArtifactThenStatus ?? 0;
      }),
      {
        numRuns: 150,
        interruptAfterTimeLimit: 90_000,
        // attack13: a Task that takes a1 back, then a chunk of a1 paired with COMPLETED: the chunk is applied, then the full read.
        examples: [
          [
            {
              events: [
                { kind: 'artifact', artifactId: 'a1', append: false, lastChunk: false },
                { kind: 'snapshot-with-artifacts' },
                { kind: 'artifact', artifactId: 'a1', append: false, lastChunk: false },
                { kind: 'completed' },
                { kind: 'artifact', artifactId: 'a1', append: false, lastChunk: false },
              ],
              cuts: [],
            },
          ],
        ],
      },
    );
    // The pairing was exercised, not only the one-by-one path.
    expect(paired).toBeGreaterThan(5);
    expect(unhandled).toEqual([]);
  }, 180_000);
});
