/**
 * The HTTP service: the producer API under /v1 (bearer tokens), the push
 * webhook (its own per-delegation auth), Bull Board under /admin/queues and the
 * page for people under /ui (one browser session for both, see session.ts),
 * metrics, health and the OpenAPI document. `createServer` returns a fastify
 * instance that is not listening; closing it closes what it created.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import fastifySwagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { Queue, type Telemetry } from 'bullmq';
import type { Registry } from 'prom-client';

import { jsonSchemaTransform, serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { resolveLimits, type A2ALimits, type AddressPolicyOptions } from '@durable-a2a/a2a';
import { ALL_QUEUES, DEFAULT_JOB_OPTIONS, JOB_RETENTION, corruptRecordReporter, createLogger, createMetrics, createFailFastRedisClient, logRedisConnectionState, queuePrefix, waitUntilConnected, type JournalDurability, type Logger, type QueueName } from '@durable-a2a/shared';
import { createProducer, type Producer } from '../producer.ts';
import { registerAdmin } from './admin.ts';
import { API_BODY_LIMIT_BYTES, apiBodyDepth, depthCheckedJsonParser } from './json-body.ts';
import { parseApiTokens, requireApiToken } from './callers.ts';
import { problem, problemErrorHandler, sendProblem } from './problem.ts';
import { answerWithin, DEFAULT_REQUEST_TIMEOUT_MS, STARTUP_REDIS_WAIT_MS } from './deadline.ts';
import { opsRoutes, type HealthReport } from './routes/ops.ts';
import { pushRoutes } from './routes/push.ts';
import { v1Routes } from './routes/v1.ts';
import { answerLinkRoutes } from './routes/answer-link.ts';
import type { AnswerLinkSettings } from '../view.ts';
import { registerUi } from './ui/routes.ts';
import { frontDoorRoutes } from './a2a/routes.ts';
import { registerSecurityHeaders } from './security-headers.ts';
import { logUrl } from './log-url.ts';
import { Sessions, type SessionOptions } from './session.ts';
import { boundConnections, fastifyHttpOptions, resolveHttpLimits, type HttpLimits } from './http-limits.ts';

export interface ServerOptions {
  /** A producer to serve (not closed by the server). Default: one created on `redisUrl` and `prefix`. */
  producer?: Producer;
  /** Address policy (R19) for `POST /v1/agents` and every agent URL of `/v1/delegations` and `/v1/workflows`, when the server creates its producer (a producer passed in applies its own). Default: public addresses only. */
  addressPolicy?: AddressPolicyOptions;
  /** Input limits for `POST /v1/agents` card fetches when the server creates its producer (partial `A2ALimits`). */
  limits?: Partial<A2ALimits>;
  /** Replicas that must acknowledge a new workflow before it is answered (when the server creates its producer). Default none. */
  durability?: JournalDurability;
  redisUrl: string;
  /** Key prefix shared with the workers. Default `da2a`. */
  prefix?: string;
  /** Accepted API tokens (Bearer on /v1 and /admin/queues), each `name:token` or a bare token (callers.ts). At least one. */
  apiTokens: string[];
  /** Default: `createLogger()` (JSON lines, secrets redacted). */
  logger?: Logger;
  /** Registry for the service's metrics. Default: a fresh one. */
  metricsRegistry?: Registry;
  /** Bearer token `GET /metrics` requires (401 without it). Default none: open, like the probes. */
  metricsToken?: string;
  /** Producer fail-fast command timeout (see ProducerOptions.commandTimeoutMs). Default 2_000. */
  commandTimeoutMs?: number;
  /** Every request is answered within this (503 problem+json with Retry-After past it). Default 5_000. */
  requestTimeoutMs?: number;
  /** Browser sessions of /ui and Bull Board (signing key, lifetime, the cookie's Secure flag); see `session.ts`. */
  session?: SessionOptions;
  /** Bull Board without write actions (retry, remove, promote, clean); writes refused with 403. Default false. */
  adminReadOnly?: boolean;
  /** Connection bounds: headers, body and keep-alive timeouts, connections overall and per client address (`DEFAULT_HTTP_LIMITS`). */
  httpLimits?: Partial<HttpLimits>;
  /** Extra liveness/readiness (e.g. an embedded fleet). Redis reachability is always part of readiness. */
  health?: () => Promise<HealthReport>;
  /** BullMQ telemetry (`startTracing().telemetry`) for the server's producer and queues. Default none. */
  telemetry?: Telemetry;
  /**
   * Signed answer links (docs/people.md "Signed answer links"): serves `/answer/<token>` and, when the server creates its
   * producer, shows each open question's link in the view. Default none (no route).
   */
  answerLinks?: AnswerLinkSettings;
}


/** The fastify instance `createServer` returns (exported so callers need no fastify import). */
export type ApiServer = FastifyInstance;

const redisOfServer = new WeakMap<ApiServer, ReturnType<typeof createFailFastRedisClient>>();

/** The connection state of a server's Redis client (`ready` when it answers). */
export function redisStatusOf(app: ApiServer): string {
  return redisOfServer.get(app)?.status ?? 'end';
}

/** The producer package's own version and licence (`src/server` and `dist/server` are both two levels below it). */
const PACKAGE = z.object({ version: z.string(), license: z.string() }).parse(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')));

/** The OpenAPI document's header and security schemes; the paths come from the route schemas. */
const OPENAPI_OPTIONS: FastifyDynamicSwaggerOptions = {
  openapi: {
    info: { title: 'durable-a2a', description: 'Durable delegations to remote A2A agents', version: PACKAGE.version, license: { name: PACKAGE.license, url: `https://spdx.org/licenses/${PACKAGE.license}.html` } },
    servers: [{ url: '/', description: 'This service (the origin that serves /openapi.json)' }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API token (DA2A_API_TOKENS)' },
        pushToken: { type: 'http', scheme: 'bearer', description: "The delegation's own push token, registered with the agent by the workers (A2A §9)" },
        notificationToken: { type: 'apiKey', in: 'header', name: 'X-A2A-Notification-Token', description: 'The same push token in the A2A header the SDKs send when the config has no authentication; accepted alone (without Authorization)' },
      },
    },
  },
  transform: jsonSchemaTransform,
};

/** One BullMQ Queue per queue name on the server's connection (Bull Board and the ops routes read them). */
function createQueues(redis: ReturnType<typeof createFailFastRedisClient>, prefix: string, telemetry: Telemetry | undefined): Record<QueueName, Queue> {
  return Object.fromEntries(
    ALL_QUEUES.map((name) => [
      name,
      new Queue(name, { connection: redis, prefix: queuePrefix(prefix), telemetry, defaultJobOptions: { ...DEFAULT_JOB_OPTIONS[name], ...JOB_RETENTION } }),
    ]),
  ) as Record<QueueName, Queue>;
}

/** `onClose`: closes the queues, the producer when the server created it (`ownProducer`), then the connection. */
async function closeCreated(redis: ReturnType<typeof createFailFastRedisClient>, queueList: Queue[], ownProducer: Producer | undefined): Promise<void> {
  if (redis.status !== 'ready') {
    // Redis down: closing gracefully would wait for a reconnect that may never come.
    await Promise.all(queueList.map((queue) => queue.disconnect().catch(() => undefined)));
    if (ownProducer) await ownProducer.close();
    redis.disconnect();
    return;
  }
  await Promise.all(queueList.map((queue) => queue.close()));
  if (ownProducer) await ownProducer.close();
  await redis.quit().catch(() => redis.disconnect());
}

export function createServer(options: ServerOptions): ApiServer {
  const namedTokens = parseApiTokens(options.apiTokens);
  const tokens = namedTokens.map(({ token }) => token);
  if (tokens.length === 0) throw new Error('createServer: apiTokens must hold at least one non-empty token');
  const prefix = options.prefix ?? 'da2a';
  const logger = options.logger ?? createLogger();
  const metrics = createMetrics(options.metricsRegistry, 'api');
  const redis = createFailFastRedisClient(options.redisUrl, options.commandTimeoutMs);
  const onCorruptRecord = corruptRecordReporter({ logger, counter: metrics.corruptRecords });
  const producer =
    options.producer ??
    createProducer({ redis, prefix, addressPolicy: options.addressPolicy, telemetry: options.telemetry, limits: options.limits, durability: options.durability, onCorruptRecord, answerLinks: options.answerLinks });
  const queues = createQueues(redis, prefix, options.telemetry);
  const queueList = Object.values(queues);
  logRedisConnectionState(logger, redis, queueList);

  // Request logging is ours (onResponse below): fastify's default lines would carry
  // the raw URL, and a header serializer could one day add Authorization.
  const httpLimits = resolveHttpLimits(options.httpLimits);
  const app = fastify({
    loggerInstance: logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: API_BODY_LIMIT_BYTES,
    ...fastifyHttpOptions(httpLimits),
  });
  boundConnections(app.server, httpLimits);
  redisOfServer.set(app, redis);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(problemErrorHandler);
  app.setNotFoundHandler((request, reply) => sendProblem(reply, problem('NOT_FOUND', `no route ${request.method} ${logUrl(request.url.split('?')[0]!)}`)));
  // JSON bodies within the depth the workers accept back (F34: 400, never a 500); A2A webhooks POST
  // `application/a2a+json` (spec §9): parsed like application/json.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(['application/json', 'application/a2a+json'], { parseAs: 'string' }, depthCheckedJsonParser(apiBodyDepth(resolveLimits(options.limits).jsonDepth)));
  // JSON only (and forms on /ui): a text/plain body is 415 UNSUPPORTED_MEDIA_TYPE, never parsed as a string.
  app.removeContentTypeParser('text/plain');
  app.addHook('onResponse', async (request, reply) => {
    request.log.info({ method: request.method, url: logUrl(request.url), statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });
  answerWithin(app, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, () => redis.status === 'ready');
  app.addHook('onReady', async () => {
    // Requests before the first connection would be refused (no offline queue): give Redis a moment.
    await waitUntilConnected(redis, STARTUP_REDIS_WAIT_MS);
  });
  app.addHook('onClose', () => closeCreated(redis, queueList, options.producer ? undefined : producer));

  registerSecurityHeaders(app);
  app.register(fastifySwagger, OPENAPI_OPTIONS);
  app.register(async (v1) => {
    v1.addHook('onRequest', requireApiToken(namedTokens));
    await v1.register(v1Routes(producer, options.addressPolicy ?? {}));
  }, { prefix: '/v1' });
  app.register(pushRoutes({ journal: producer.journal, reconcile: queues.reconcile, metrics, limits: options.limits }), { prefix: '/v1' });
  app.register(frontDoorRoutes({ producer, apiTokens: tokens, jsonDepth: apiBodyDepth(resolveLimits(options.limits).jsonDepth), addressPolicy: options.addressPolicy }));
  const sessions = new Sessions(tokens, options.session);
  app.register(async (root) => registerAdmin(root, queueList, tokens, sessions, { readOnly: options.adminReadOnly ?? false }));
  app.register(async (root) => registerUi(root, { producer, apiTokens: tokens, sessions, server: app }));
  if (options.answerLinks) app.register(answerLinkRoutes({ journal: producer.journal, queues, links: options.answerLinks }));
  app.register(async (root) => opsRoutes(root, { redis, queues: queueList, metrics, health: options.health, journal: producer.journal, metricsToken: options.metricsToken }));
  return app;
}
