/**
 * The `durable-a2a-workers` executable: parse config, start the fleet, close
 * it gracefully (bounded) on SIGTERM / SIGINT.
 */
import { createLogger, parseEnvironmentOrExit } from '@durable-a2a/shared';
import { fleetOptionsFrom, parseWorkerEnvironment } from './config.ts';
import { startFleet } from './fleet.ts';
import { startOpsServer } from './ops-server.ts';

const environment = parseEnvironmentOrExit(parseWorkerEnvironment);
const logger = createLogger({ level: environment.LOG_LEVEL });
const fleet = await startFleet({ ...fleetOptionsFrom(environment), logger });
const opsServer = environment.DA2A_METRICS_PORT === undefined ? undefined : await startOpsServer(fleet, environment.DA2A_METRICS_PORT);
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'closing the fleet');
    opsServer?.close();
    fleet.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'close failed');
        process.exit(1);
      },
    );
  });
}
// Tells a parent process (tests, the demo) that the fleet is running.
const address = opsServer?.address();
process.send?.({ ready: true, workerId: fleet.context.workerId, opsPort: typeof address === 'object' && address ? address.port : undefined });
