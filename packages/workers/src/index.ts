// Public surface of @durable-a2a/workers.
export { startFleet } from './fleet.ts';
export type { Fleet, StartFleetOptions } from './fleet.ts';
export { compileFleetOptions } from './options.ts';
export type { FleetOptions, CompiledFleetOptions } from './options.ts';
export { decide, failureOf, needsUndo } from './decide.ts';
export type { Decision, WorkflowSnapshot, AttemptView, PreviousAttempt, CandidateLookup } from './decide.ts';
export { fullJitterDelayMs, jitteredCheckTime } from './backoff.ts';
export type { BackoffOptions } from './backoff.ts';
export { httpVerifier } from './verifiers.ts';
export type { Verifier, Verification, Effect, VerifierRegistry, HttpVerifierOptions } from './verifiers.ts';
export type { CompensationHandler } from './queues/compensate.ts';
export type { CrashPoint, WorkerContext } from './context.ts';
export { checkPersistence, UnsafePersistenceError } from './persistence.ts';
export { NoUsableInterfaceError } from './agents.ts';
export { startOpsServer } from './ops-server.ts';
export { watchFetchProgress } from './health.ts';
export type { QueueHealth } from './health.ts';
export { parseWorkerEnvironment, fleetOptionsFrom, WorkerEnvironmentSchema } from './config.ts';
