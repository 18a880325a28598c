/**
 * Per-test lifecycle for files that start their own agent, producer and fleet in each test: all three are closed
 * after every test, the fleet first (it may still call the agent), then the agent, then the producer.
 */
import { afterEach } from 'vitest';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet, StartFleetOptions } from '@durable-a2a/workers';
import { startTestFleet } from './fleet.ts';
import { startScriptedAgent, type ScriptedAgentHandle, type ScriptedHandlers } from './scripted-agent.ts';

/** Something a test started and must close. */
interface Closable {
  close(): Promise<unknown>;
}

/**
 * Registers an `afterEach` that closes what `current()` returns, in the order fleet, agent, producer (absent
 * ones skipped), then calls `reset()` so the next test starts from nothing.
 */
export function closeAfterEach(current: () => { fleet?: Closable | undefined; agent?: Closable | undefined; producer?: Closable | undefined }, reset: () => void): void {
  afterEach(async () => {
    const { fleet, agent, producer } = current();
    await fleet?.close();
    await agent?.close();
    await producer?.close();
    reset();
  });
}

/** What a test started with `useScriptedFleet`'s `start`. */
export interface ScriptedFleetCase {
  agent: ScriptedAgentHandle;
  producer: Producer;
  fleet: Fleet;
}

/**
 * Vitest helper for tests that each start a scripted agent, a producer and a test fleet: returns `start(handlers,
 * { prefix, fleet })`, which starts the agent (`startScriptedAgent(handlers)`), a producer on `prefix` of `server()`
 * (loopback allowed) and `startTestFleet` there (more fleet options in `fleet`), in that order. An `afterEach`
 * (`closeAfterEach`) closes the fleet, the agent and the producer the test started.
 */
export function useScriptedFleet(
  server: () => { readonly url: string },
): (handlers: ScriptedHandlers, options: { prefix: string; fleet?: Partial<StartFleetOptions> }) => Promise<ScriptedFleetCase> {
  let started: Partial<ScriptedFleetCase> = {};
  closeAfterEach(
    () => started,
    () => void (started = {}),
  );
  return async (handlers, options) => {
    const agent = (started.agent = await startScriptedAgent(handlers));
    const producer = (started.producer = createProducer({ redis: server().url, prefix: options.prefix, addressPolicy: { allowLoopback: true } }));
    const fleet = (started.fleet = await startTestFleet({ redisUrl: server().url, prefix: options.prefix, ...options.fleet }));
    return { agent, producer, fleet };
  };
}

/**
 * Vitest helper: returns `keep(...resources)`; an `afterEach` closes what the test kept, the last kept first, one at a
 * time (keep the fleet after the agent and the producer it uses, so that it closes first).
 */
export function closeKeptAfterEach(): (...resources: Closable[]) => void {
  const kept: Closable[] = [];
  afterEach(async () => {
    for (const resource of kept.splice(0).reverse()) await resource.close();
  });
  return (...resources) => void kept.push(...resources);
}
