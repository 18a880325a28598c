/**
 * A worker process with tracing on, for the tracing test: its spans go to an
 * InMemorySpanExporter and are sent to the parent over IPC on request
 * (`{ spans: true }` → `{ spans: SpanRecord[] }`). Config from the
 * environment: DA2A_TRACED_WORKER=1, REDIS_URL, DA2A_PREFIX, DA2A_QUEUES (comma-separated), OTEL_SERVICE_NAME.
 */
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { startTracing, type QueueName } from '@durable-a2a/shared';
import { startTestFleet } from './fleet.ts';
import { spanRecord } from './spans.ts';

// Only as a forked child: importing this file elsewhere starts nothing.
if (process.send && process.env.DA2A_TRACED_WORKER === '1') {
  const exporter = new InMemorySpanExporter();
  const tracing = startTracing({ serviceName: process.env.OTEL_SERVICE_NAME ?? 'traced-worker', spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const fleet = await startTestFleet({
    redisUrl: process.env.REDIS_URL!,
    prefix: process.env.DA2A_PREFIX!,
    queues: process.env.DA2A_QUEUES!.split(',') as QueueName[],
    reconcileIntervalMs: 60_000,
    telemetry: tracing.telemetry,
  });
  process.on('message', (message: { spans?: boolean }) => {
    if (message.spans) process.send!({ spans: exporter.getFinishedSpans().map(spanRecord) });
  });
  process.on('SIGTERM', () => void fleet.close().then(() => tracing.shutdown()).finally(() => process.exit(0)));
  process.send({ ready: true, workerId: fleet.context.workerId });
}
