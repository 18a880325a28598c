/**
 * An agent's health written in coalesced windows: recordAgentCall-1.lua takes several outcomes, oldest first, in one
 * call (both return codes), and a worker's AgentHealthRecorder sends the calls of one window to one agent as one
 * script call, on its timer or at `flush()` (the fleet's close). Real Redis; the health entry is what the registry
 * writes at registration (an empty JSON object: no outcome yet).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentRegistry, type TimedAgentCall } from '@durable-a2a/shared';
import { AgentHealthRecorder } from '../packages/workers/src/agent-health.ts';
import { useRedisServer } from './harness/redis.ts';
import { eventually } from './harness/fleet.ts';

const redisServer = useRedisServer();
let redis: Redis;
let counter = 0;
const agentA = 'http://agent-a.test/.well-known/agent-card.json';
const agentB = 'http://agent-b.test/.well-known/agent-card.json';

beforeAll(() => {
  redis = new Redis(redisServer().url);
});
afterAll(() => redis.disconnect());

/** A registry under a fresh prefix with `agents` registered (an empty health entry each), and its health reader. */
async function registryWith(agents: readonly string[]) {
  const prefix = `health${counter++}`;
  for (const agent of agents) await redis.hset(`${prefix}:agents:health`, agent, '{}');
  const health = async (agent: string) => JSON.parse((await redis.hget(`${prefix}:agents:health`, agent)) ?? 'null') as Record<string, unknown> | null;
  return { prefix, registry: new AgentRegistry(redis, { prefix }), health };
}

describe('recordAgentCall-1.lua: several calls in one script call', () => {
  it('records every outcome oldest first: recent, the last success, the last error and the last card fetch (1 recorded)', async () => {
    const { registry, health } = await registryWith([agentA]);
    const calls: TimedAgentCall[] = [
      { kind: 'card', at: 1_000 },
      { kind: 'send', at: 2_000 },
      { kind: 'send', at: 3_000, error: 'refused' },
      { kind: 'send', at: 4_000 },
    ];
    expect(await registry.recordCalls(agentA, calls)).toBe('recorded');
    expect(await health(agentA)).toEqual({ recent: '1101', lastCardFetchAt: 1_000, lastCardFetchOk: true, lastSuccessAt: 4_000, lastErrorAt: 3_000, lastError: 'refused', lastErrorKind: 'send' });
  });

  it('writes nothing for an agent that is not registered (0 unregistered)', async () => {
    const { prefix, registry } = await registryWith([]);
    expect(await registry.recordCalls(agentA, [{ kind: 'send', at: 1 }])).toBe('unregistered');
    expect(await redis.exists(`${prefix}:agents:health`)).toBe(0);
  });
});

describe('AgentHealthRecorder: one script call per agent per window', () => {
  it('sends the calls of a window to each agent together, in order, on its timer', async () => {
    const { registry, health } = await registryWith([agentA, agentB]);
    const writes: { agent: string; calls: number }[] = [];
    const counting = { recordCalls: (agent: string, calls: readonly TimedAgentCall[]) => (writes.push({ agent, calls: calls.length }), registry.recordCalls(agent, calls)) };
    let now = 0;
    const recorder = new AgentHealthRecorder(counting, () => ++now, () => undefined, 50);
    for (let index = 0; index < 5; index++) recorder.record(agentA, index === 3 ? { kind: 'send', error: 'down' } : { kind: 'send' });
    recorder.record(agentB, { kind: 'card' });
    await eventually(async () => (await health(agentB))?.recent === '1', 'the window was written');
    expect(writes).toEqual([
      { agent: agentA, calls: 5 },
      { agent: agentB, calls: 1 },
    ]);
    expect(await health(agentA)).toMatchObject({ recent: '11101', lastErrorAt: 4, lastSuccessAt: 5 });
  });

  it('flush() writes what is pending at once, and a failed write is reported with its agent', async () => {
    const { registry, health } = await registryWith([agentA]);
    const failures: string[] = [];
    const failing = { recordCalls: async (agent: string, calls: readonly TimedAgentCall[]) => (agent === agentB ? Promise.reject(new Error('refused')) : registry.recordCalls(agent, calls)) };
    const recorder = new AgentHealthRecorder(failing, () => 7, (_error, agent) => failures.push(agent), 60_000);
    recorder.record(agentA, { kind: 'send' });
    recorder.record(agentB, { kind: 'send' });
    expect(await health(agentA)).toEqual({});
    await recorder.flush();
    expect(await health(agentA)).toEqual({ recent: '1', lastSuccessAt: 7 });
    expect(failures).toEqual([agentB]);
  });
});
