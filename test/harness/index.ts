/**
 * Integration test harness: a private redis-server, scripted SDK agents, a raw
 * wire server and a booking system of record, all on 127.0.0.1 and port 0.
 */
export { resolveRedisServerBinary, startRedisServer, testsOnCluster, useRedisServer } from './redis.ts';
export { startRedisCluster } from './redis-cluster.ts';
export type { RedisClusterHandle } from './redis-cluster.ts';
export type { RedisServerHandle, RedisServerOptions } from './redis.ts';
export { startDemoAgent, useDemoAgent } from './agent.ts';
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
export type { ReceivedMessage } from './agent-executor.ts';
export type { A2AMethod } from './agent-instrumentation.ts';
export { jsonRpcError, jsonRpcResult, sendJson, sseEvent, sseHeaders, startRawAgent } from './raw-agent.ts';
export type { RawAgentHandle, RawAgentHandler, RawRequest } from './raw-agent.ts';
export { book, cancelBooking, startBookingService } from './booking-service.ts';
export type { Booking, BookingCounts, BookingServiceHandle } from './booking-service.ts';
export { findFreePort } from './ports.ts';
export { type VoltAgentHandle, startVoltAgent } from './voltagent-agent.ts';
