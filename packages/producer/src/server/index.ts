// Public surface of @durable-a2a/producer/server (the HTTP service).
export { createServer, redisStatusOf, routeTable } from './server.ts';
export type { ApiServer, ServerOptions } from './server.ts';
// For callers that drive the server with `inject` without depending on fastify.
export type { InjectOptions, LightMyRequestResponse as InjectResponse } from 'fastify';
export type { HealthReport } from './routes/ops.ts';
export { PROBLEMS, PROBLEM_CONTENT_TYPE } from './problem.ts';
export type { Problem, ProblemCode } from './problem.ts';
export { ADMIN_BASE_PATH, UI_BASE_PATH } from './admin.ts';
export { SESSION_COOKIE, DEFAULT_SESSION_LIFETIME_MS, type SessionOptions } from './session.ts';
export { ServerEnvironmentSchema, parseServerEnvironment, httpLimitsFrom, sessionFrom, tenantsFrom } from './config.ts';
export { TenantsConfigSchema, TenantsConfigError, parseTenantsConfig, type TenantsConfig, type TenantsConfigInput } from './tenants.ts';
export { DEFAULT_HTTP_LIMITS, type HttpLimits } from './http-limits.ts';
