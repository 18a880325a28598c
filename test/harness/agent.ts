/** The scripted SDK agent lives in @durable-a2a/testing; this file adds the vitest hooks. */
import { afterAll, beforeAll } from 'vitest';
import { startDemoAgent, type DemoAgentHandle, type DemoAgentOptions } from '@durable-a2a/testing';

export { startDemoAgent } from '@durable-a2a/testing';
export type { DemoAgentBinding, DemoAgentHandle, DemoAgentOptions, DemoAgentSkill, SeenHttpRequest } from '@durable-a2a/testing';

/**
 * Vitest helper: starts an agent in `beforeAll`, stops it in `afterAll`, and
 * returns a getter for the handle (valid inside tests and later hooks).
 */
export function useDemoAgent(options: DemoAgentOptions = {}): () => DemoAgentHandle {
  let handle: DemoAgentHandle | undefined;
  beforeAll(async () => {
    handle = await startDemoAgent(options);
  });
  afterAll(async () => {
    await handle?.stop();
  });
  return () => {
    if (!handle) throw new Error('useDemoAgent: the agent is only available inside tests (after beforeAll)');
    return handle;
  };
}
