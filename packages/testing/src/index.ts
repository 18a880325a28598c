/**
 * @durable-a2a/testing: what you need to test your own orchestration against
 * real components, all on 127.0.0.1 and free ports.
 *
 * - `startRedisServer()`: a private `redis-server` (its own port and temp
 *   directory, `noeviction`, optional AOF) with `stop`, `kill` (a crash) and
 *   `restart`. Needs `redis-server` on PATH or `REDIS_SERVER_BIN`.
 * - `startDemoAgent({ behaviour })`: a real @a2a-js/sdk A2A agent scripted per
 *   test. Behaviours: `completesWith` (complete), `asksForInput` (ask),
 *   `rejects` (reject), `fails` (fail), `runsSlowly` (slow), `requiresAuth`,
 *   `repliesWith`; faults on the handle: `dropStreamsAfter(n)` (drop stream),
 *   `restart({ forgetTasks })` (restart and forget); counters
 *   `sendMessageCount`, `requestCount`, `receivedMessages`.
 * - `startRawAgent(handler)`: a plain node:http server for wire-level cases.
 * - `startMonitor(url)`: Redis MONITOR on a connection of its own, to count the
 *   commands a server runs.
 */
export { resolveRedisServerBinary, startRedisServer, spawnReady as spawnRedisProcess, terminate as stopRedisProcess } from './redis.ts';
export type { RedisServerHandle, RedisServerOptions } from './redis.ts';
export { startMonitor } from './monitor.ts';
export { startDemoAgent } from './agent.ts';
export type { DemoAgentBinding, DemoAgentHandle, DemoAgentOptions, DemoAgentSkill, SeenHttpRequest } from './agent.ts';
export {
  asksForInput,
  completesWith,
  completionSteps,
  fails,
  rejects,
  repliesWith,
  requiresAuth,
  runsSlowly,
} from './agent-behaviours.ts';
export type {
  AgentRequest,
  ArtifactStep,
  Behaviour,
  CompletesWithOptions,
  DelayStep,
  DirectMessageStep,
  RequiresAuthOptions,
  ScriptedTaskState,
  SideEffectStep,
  StateStep,
  Step,
} from './agent-behaviours.ts';
export { ScriptedExecutor } from './agent-executor.ts';
export type { ReceivedMessage } from './agent-executor.ts';
export { countingRequestHandler, streamDropper } from './agent-instrumentation.ts';
export type { A2AMethod } from './agent-instrumentation.ts';
export { jsonRpcError, jsonRpcResult, sendJson, sseEvent, sseHeaders, startRawAgent } from './raw-agent.ts';
export type { RawAgentHandle, RawAgentHandler, RawRequest } from './raw-agent.ts';
export { closeServer, findFreePort, listenOnLoopback, trackSockets } from './ports.ts';
export { quietSdkConsole, quietTerminalSubscribeRefusals } from './quiet-sdk.ts';
