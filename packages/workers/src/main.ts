/**
 * The `durable-a2a-workers` executable: parse config, start the fleet, close
 * it on SIGTERM / SIGINT within DA2A_CLOSE_TIMEOUT_MS whatever Redis does.
 * Past the timeout the process logs one line naming the jobs it abandoned
 * (the stalled-job check and the reconciler pick them up) and exits 1.
 * Configuration errors, an ops port it cannot bind (DA2A_METRICS_PORT taken)
 * and a strict persistence refusal exit 2 with one line on stderr, no stack
 * trace, before any job is taken.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { TracingEnvironmentSchema, createLogger, exitOnSignals, listenOrExit, parseEnvironmentOrExit, startTracing } from '@durable-a2a/shared';
import { fleetOptionsFrom, parseWorkerEnvironment } from './config.ts';
import { startFleet, type Fleet } from './fleet.ts';
import { bindOpsServer } from './ops-server.ts';
import { UnsafePersistenceError, watchPersistence } from './persistence.ts';

const environment = parseEnvironmentOrExit(parseWorkerEnvironment);
const logger = createLogger({ level: environment.LOG_LEVEL });
const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });
// The ops port is bound before the fleet starts: a taken port is one line and exit 2, before any job is taken.
const metricsPort = environment.DA2A_METRICS_PORT;
const host = environment.DA2A_METRICS_HOST;
const opsServer =
  metricsPort === undefined
    ? undefined
    : await listenOrExit(() => bindOpsServer(metricsPort, { host, token: environment.DA2A_METRICS_TOKEN, registry: metricsRegistry }), {
        portSetting: 'DA2A_METRICS_PORT',
        hostSetting: 'DA2A_METRICS_HOST',
        port: metricsPort,
        host,
      });
// OpenTelemetry: off unless the standard OTEL_* variables configure it (docs/observability.md "Tracing (OpenTelemetry)").
const tracing = startTracing({ serviceName: 'durable-a2a-workers', environment: parseEnvironmentOrExit((variables) => TracingEnvironmentSchema.parse(variables)) });
let fleet: Fleet;
try {
  fleet = await startFleet({ ...fleetOptionsFrom(environment), logger, metricsRegistry, telemetry: tracing.telemetry });
} catch (error) {
  if (!(error instanceof UnsafePersistenceError)) throw error;
  console.error(`configuration error: DA2A_STRICT_PERSISTENCE=true refuses this Redis: ${error.message}`);
  process.exit(2);
}
const persistence = watchPersistence(fleet.context.journal.redis, logger);
opsServer?.serve(fleet, persistence);
exitOnSignals({
  logger,
  timeoutMs: environment.DA2A_CLOSE_TIMEOUT_MS,
  abandoned: () => ({ inFlightJobs: Object.fromEntries(fleet.health().queues.map((queue) => [queue.queue, queue.activeJobs])) }),
  redisReachable: () => fleet.context.journal.redis.status === 'ready',
  pickedUpBy: 'the stalled-job check and the reconciler pick them up',
  async close() {
    persistence.stop();
    opsServer?.server.close();
    await fleet.close();
    await tracing.shutdown();
  },
});
// Tells a parent process (tests, the demo) that the fleet is running; the ops port is logged too (with
// DA2A_METRICS_PORT=0 the system picks it, and a person reading the log needs to know which).
const address = opsServer?.server.address();
if (typeof address === 'object' && address) logger.info({ opsPort: address.port, host: address.address }, 'metrics and health listening (/metrics, /healthz, /readyz)');
process.send?.({ ready: true, workerId: fleet.context.workerId, opsPort: typeof address === 'object' && address ? address.port : undefined });
