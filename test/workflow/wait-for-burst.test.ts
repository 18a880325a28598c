/**
 * producer.waitFor under bursts of first waits on a fresh producer: the change subscriber's connection is
 * opened once for all of them (one shared ready state), carries nothing but subscriber commands, and no
 * change published before or while it subscribes is lost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { useRedisServer, testsOnCluster } from '../harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from '../harness/agent.ts';
import { runsSlowly } from '../harness/agent-behaviours.ts';
import { startTestFleet } from '../harness/fleet.ts';

const redisServer = useRedisServer();
const PREFIX = 'burst';
const IDLE_PREFIX = 'burst-idle';
const NOWHERE = 'http://127.0.0.1:9/.well-known/agent-card.json';
const SETTLED = ['COMPLETED', 'COMPENSATED', 'FAILED', 'CANCELED', 'NEEDS_ATTENTION'] as const;
let fleet: Fleet;
/** Agents that work 0, 50 and 200 ms before completing. */
let agents: DemoAgentHandle[] = [];
let sequence = 0;

beforeAll(async () => {
  agents = await Promise.all([0, 50, 200].map((ms) => startDemoAgent({ behaviour: runsSlowly(ms, `done after ${ms} ms`) })));
  fleet = await startTestFleet({ redisUrl: redisServer().url, prefix: PREFIX });
});
afterAll(async () => {
  await fleet?.close();
  await Promise.all(agents.map((agent) => agent.close()));
});

const freshProducer = (prefix = PREFIX): Producer => createProducer({ redis: redisServer().url, prefix, addressPolicy: { allowLoopback: true } });

/**
 * Records every command the server runs (MONITOR on a raw socket; one server only) while `run` runs, and returns
 * the commands of the connections that sent a SUBSCRIBE (the change subscriber's), lower-cased.
 */
async function subscriberCommandsDuring(run: () => Promise<void>): Promise<string[]> {
  const { port } = redisServer();
  const socket = connect({ host: '127.0.0.1', port });
  const byClient = new Map<string, string[]>();
  let buffered = '';
  let started: () => void = () => undefined;
  const monitoring = new Promise<void>((resolve) => (started = resolve));
  const marker = `probe-${++sequence}`;
  let markerSeen: () => void = () => undefined;
  const seen = new Promise<void>((resolve) => (markerSeen = resolve));
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\r\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      if (line === '+OK') started();
      const entry = /^\+[\d.]+ \[\d+ ([^\]]+)\] "([^"]*)"/.exec(line);
      if (!entry) continue;
      if (line.includes(marker)) markerSeen();
      byClient.set(entry[1]!, [...(byClient.get(entry[1]!) ?? []), entry[2]!.toLowerCase()]);
    }
  });
  socket.write('MONITOR\r\n');
  try {
    await monitoring;
    await run();
    // The feed trails the commands: a command of our own sent after `run` marks the end of its commands.
    const probe = new Redis(redisServer().url);
    await probe.echo(marker);
    await probe.quit();
    await Promise.race([seen, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  } finally {
    socket.destroy();
  }
  return [...byClient.values()].filter((commands) => commands.includes('subscribe')).flat();
}

describe('waitFor: a burst of first waits on a fresh producer', () => {
  it('F37: 50 × (delegate + waitFor 8 s) at once on each of several fresh producers: every wait resolves with the final view', async () => {
    const slow = agents[2]!;
    for (let round = 0; round < 12; round++) {
      const producer = freshProducer();
      try {
        const views = await Promise.all(
          Array.from({ length: 50 }, async (_, index) => {
            const { id } = await producer.delegate({ agent: slow.cardUrl, text: `burst ${round}.${index}` });
            return producer.waitFor(id, { timeoutMs: 8_000 });
          }),
        );
        for (const view of views) {
          expect(view.state).toBe('COMPLETED');
          expect(view.steps[0]!.attempts[0]!.resultText).toBe('done after 200 ms');
          expect(view).toEqual(await producer.get(view.workflowId));
        }
      } finally {
        await producer.close();
      }
    }
  });

  it.skipIf(testsOnCluster())('F37: the subscriber connection receives subscriber commands only (no ready check, no client info)', async () => {
    const producer = freshProducer(IDLE_PREFIX);
    const ids = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const workflowId = `quiet-${++sequence}`;
        await producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: NOWHERE, message: { text: 'never sent' } }] });
        return workflowId;
      }),
    );
    const commands = await subscriberCommandsDuring(async () => {
      try {
        const waits = ids.map((id) => producer.waitFor(id, { timeoutMs: 20_000 }));
        await Promise.all(ids.map((id) => producer.journal.updateWorkflow(id, { state: 'FAILED' })));
        for (const view of await Promise.all(waits)) expect(view.state).toBe('FAILED');
      } finally {
        await producer.close();
      }
    });
    // The first waits SUBSCRIBE their channels; from the eighth at once on (PATTERN_FROM_WAITERS) the burst shares one
    // PSUBSCRIBE (none when the early waits settled before the later ones started).
    expect(commands).toContain('subscribe');
    expect(commands.filter((command) => command === 'psubscribe').length).toBeLessThanOrEqual(1);
    expect(commands.filter((command) => !['subscribe', 'unsubscribe', 'psubscribe', 'punsubscribe', 'quit'].includes(command))).toEqual([]);
  });

  it('property: bursts of first waits on fresh producers (random size, agent delay, and when each change is published) all resolve with the change', async () => {
    const idle = freshProducer(IDLE_PREFIX);
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.oneof(
              // A delegation an agent completes after 0, 50 or 200 ms.
              fc.record({ kind: fc.constant('agent' as const), agent: fc.integer({ min: 0, max: 2 }) }),
              // A workflow nobody works on, moved by the test: before the wait, at once, or a little later.
              fc.record({ kind: fc.constant('publish' as const), state: fc.constantFrom(...SETTLED), delayMs: fc.constantFrom(-1, 0, 1, 5, 20, 60) }),
            ),
            { minLength: 1, maxLength: 40 },
          ),
          async (burst) => {
            const producer = freshProducer();
            const fresh = createProducer({ redis: redisServer().url, prefix: IDLE_PREFIX, addressPolicy: { allowLoopback: true } });
            try {
              const outcomes = burst.map(async (entry) => {
                if (entry.kind === 'agent') {
                  const { id } = await producer.delegate({ agent: agents[entry.agent]!.cardUrl, text: 'burst' });
                  return { view: await producer.waitFor(id, { timeoutMs: 20_000 }), expected: 'COMPLETED' };
                }
                const workflowId = `property-${++sequence}`;
                await idle.startWorkflow({ workflowId, steps: [{ name: 'main', agent: NOWHERE, message: { text: 'never sent' } }] });
                const change = () => idle.journal.updateWorkflow(workflowId, { state: entry.state });
                if (entry.delayMs < 0) await change();
                const waiting = fresh.waitFor(workflowId, { timeoutMs: 20_000 });
                if (entry.delayMs === 0) await change();
                else if (entry.delayMs > 0) setTimeout(() => void change(), entry.delayMs);
                return { view: await waiting, expected: entry.state };
              });
              for (const { view, expected } of await Promise.all(outcomes)) expect(view.state).toBe(expected);
            } finally {
              await Promise.all([producer.close(), fresh.close()]);
            }
          },
        ),
        { numRuns: 12 },
      );
    } finally {
      await idle.close();
    }
  });
});
