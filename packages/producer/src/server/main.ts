/**
 * The `durable-a2a-api` executable: parse config, listen, close gracefully
 * on SIGTERM / SIGINT (fastify stops accepting, finishes in-flight requests,
 * then closes queues and Redis).
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createLogger, durabilityFrom, parseEnvironmentOrExit } from '@durable-a2a/shared';
import { parseServerEnvironment } from './config.ts';
import { createServer } from './server.ts';

const environment = parseEnvironmentOrExit(parseServerEnvironment);
const logger = createLogger({ level: environment.LOG_LEVEL });
const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });
const app = createServer({
  redisUrl: environment.REDIS_URL,
  prefix: environment.DA2A_PREFIX,
  apiTokens: environment.DA2A_API_TOKENS,
  pushAcceptTokenOnly: environment.DA2A_PUSH_ACCEPT_TOKEN_ONLY,
  durability: durabilityFrom(environment),
  addressPolicy: { allowLoopback: environment.DA2A_ALLOW_LOOPBACK, allowPrivate: environment.DA2A_ALLOW_PRIVATE, allowedHosts: environment.DA2A_ALLOWED_AGENT_HOSTS },
  logger,
  metricsRegistry,
});
await app.listen({ port: environment.PORT, host: environment.HOST });

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'closing the HTTP service');
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'close failed');
        process.exit(1);
      },
    );
  });
}
