/**
 * The `durable-a2a-api` executable: parse config, listen, close gracefully
 * on SIGTERM / SIGINT (fastify stops accepting, finishes in-flight requests,
 * then closes queues and Redis). The close is bounded by
 * DA2A_CLOSE_TIMEOUT_MS whatever Redis does: past it the process logs what
 * it abandoned and exits 1.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { addressPolicyFrom } from '@durable-a2a/a2a';
import { TracingEnvironmentSchema, createLogger, durabilityFrom, exitOnSignals, listenOrExit, parseEnvironmentOrExit, startTracing } from '@durable-a2a/shared';
import { httpLimitsFrom, parseServerEnvironment, sessionFrom, tenantsFrom } from './config.ts';
import { createServer, redisStatusOf } from './server.ts';

const environment = parseEnvironmentOrExit(parseServerEnvironment);
const logger = createLogger({ level: environment.LOG_LEVEL });
// OpenTelemetry: off unless the standard OTEL_* variables configure it.
const tracing = startTracing({ serviceName: 'durable-a2a-api', environment: parseEnvironmentOrExit((variables) => TracingEnvironmentSchema.parse(variables)) });
const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });
const app = createServer({
  redisUrl: environment.REDIS_URL,
  prefix: environment.DA2A_PREFIX,
  apiTokens: environment.DA2A_API_TOKENS,
  tenants: parseEnvironmentOrExit(() => tenantsFrom(environment)),
  durability: durabilityFrom(environment),
  addressPolicy: addressPolicyFrom(environment),
  requestTimeoutMs: environment.DA2A_REQUEST_TIMEOUT_MS,
  httpLimits: httpLimitsFrom(environment),
  commandTimeoutMs: environment.DA2A_COMMAND_TIMEOUT_MS,
  adminReadOnly: environment.DA2A_ADMIN_READ_ONLY,
  session: sessionFrom(environment),
  limits: environment.DA2A_LIMIT_AGENT_CARD_BYTES ? { agentCardBytes: environment.DA2A_LIMIT_AGENT_CARD_BYTES } : {},
  logger,
  metricsRegistry,
  metricsToken: environment.DA2A_METRICS_TOKEN,
  telemetry: tracing.telemetry,
  ...(environment.DA2A_LINK_SECRET
    ? { answerLinks: { secret: environment.DA2A_LINK_SECRET, baseUrl: environment.DA2A_PUBLIC_URL ?? `http://${environment.HOST}:${environment.PORT}`, ttlMs: environment.DA2A_ANSWER_LINK_TTL_MS } }
    : {}),
});
await listenOrExit(() => app.listen({ port: environment.PORT, host: environment.HOST }), { portSetting: 'PORT', hostSetting: 'HOST', port: environment.PORT, host: environment.HOST });
// Tells a parent process (tests, the demo) where the service listens.
const address = app.server.address();
process.send?.({ ready: true, port: typeof address === 'object' && address ? address.port : undefined });

exitOnSignals({
  logger,
  timeoutMs: environment.DA2A_CLOSE_TIMEOUT_MS,
  abandoned: () => ({ openConnections: 'open HTTP requests', redis: 'queue and journal connections' }),
  redisReachable: () => redisStatusOf(app) === 'ready',
  pickedUpBy: 'nothing is lost: journal writes are atomic and the workers reconcile',
  close: () => app.close().then(() => tracing.shutdown()),
});
