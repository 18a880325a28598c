/**
 * OpenTelemetry (issue 15): one workflow is one trace across the producer and
 * two worker processes (send in one, follow in the other), with the
 * producer's span as the root, a span per delegation attempt, BullMQ's span
 * per queue job, and `traceparent` on every A2A call. Each process exports to
 * its own InMemorySpanExporter; the workers hand theirs over IPC.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { createProducer, type Producer } from '@durable-a2a/producer';
import { traceContextHeaders } from '@durable-a2a/a2a';
import { SPAN_ATTRIBUTES, startTracing, type Tracing } from '@durable-a2a/shared';
import { useRedisServer } from './harness/redis.ts';
import { startDemoAgent, type DemoAgentHandle } from './harness/agent.ts';
import { completesWith } from './harness/agent-behaviours.ts';
import { eventually, spawnWorkerProcess, type WorkerProcess } from './harness/fleet.ts';
import { spanRecord, type SpanRecord } from './harness/spans.ts';

const redisServer = useRedisServer();
const PREFIX = 'traced';
const TRACED_WORKER = fileURLToPath(new URL('./harness/traced-worker.ts', import.meta.url));

let agent: DemoAgentHandle;
let tracing: Tracing;
let exporter: InMemorySpanExporter;
let producer: Producer;
const workers: WorkerProcess[] = [];

/** The finished spans of a worker process, over IPC. */
function spansOf(worker: WorkerProcess): Promise<SpanRecord[]> {
  return new Promise((resolve) => {
    const onMessage = (message: { spans?: SpanRecord[] }) => {
      if (!message.spans) return;
      worker.child.off('message', onMessage);
      resolve(message.spans);
    };
    worker.child.on('message', onMessage);
    worker.child.send({ spans: true });
  });
}

beforeAll(async () => {
  agent = await startDemoAgent({ behaviour: completesWith('traced') });
  exporter = new InMemorySpanExporter();
  tracing = startTracing({ serviceName: 'producer', spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  producer = createProducer({ redis: redisServer().url, prefix: PREFIX, addressPolicy: { allowLoopback: true }, telemetry: tracing.telemetry });
  const base = { REDIS_URL: redisServer().url, DA2A_PREFIX: PREFIX, DA2A_TRACED_WORKER: '1' };
  workers.push(spawnWorkerProcess({ ...base, DA2A_QUEUES: 'send,reconcile,verify,compensate', OTEL_SERVICE_NAME: 'worker-a' }, TRACED_WORKER));
  workers.push(spawnWorkerProcess({ ...base, DA2A_QUEUES: 'follow', OTEL_SERVICE_NAME: 'worker-b' }, TRACED_WORKER));
  await Promise.all(workers.map((worker) => worker.ready));
}, 60_000);
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.kill('SIGTERM')));
  await producer?.close();
  await tracing?.shutdown();
  await agent?.close();
});

describe('tracing', () => {
  it('off: no span context, no traceparent', () => {
    expect(startTracing({ serviceName: 'off', environment: {} }).enabled).toBe(false);
    expect(traceContextHeaders()).toEqual({});
  });

  it('one workflow is one trace across the producer and two worker processes; every A2A call carries its traceparent', async () => {
    const { id } = await producer.delegate({ agent: agent.cardUrl, text: 'trace me', idempotencyKey: 'traced-1' });
    await eventually(async () => (await producer.get(id)).state === 'COMPLETED', 'the delegation completed', 30_000);

    const producerSpans = exporter.getFinishedSpans().map(spanRecord);
    const root = producerSpans.find((span) => span.name === 'workflow.start')!;
    expect(root).toBeDefined();
    expect(root.parentSpanId).toBeUndefined();
    expect(root.attributes[SPAN_ATTRIBUTES.workflowId]).toBe(id);
    const traceId = root.traceId;

    // The attempt's span, child of the producer's, names the delegation.
    const attempt = producerSpans.find((span) => span.name === 'delegation main.1')!;
    expect(attempt).toMatchObject({ traceId, parentSpanId: root.spanId });
    expect(attempt.attributes).toMatchObject({ [SPAN_ATTRIBUTES.delegationId]: 'main.1', [SPAN_ATTRIBUTES.step]: 'main', [SPAN_ATTRIBUTES.agentCardUrl]: agent.cardUrl });

    // A job's span ends after its processor returns (after the journal says COMPLETED), so wait until both
    // job spans are there and every finished span of the trace reaches the producer's root (nothing dangles).
    const rootOf = (span: SpanRecord, byId: Map<string, SpanRecord>) => {
      let current: SpanRecord | undefined = span;
      for (let depth = 0; current?.parentSpanId && depth < 50; depth += 1) current = byId.get(current.parentSpanId);
      return current;
    };
    const { inTrace, byId } = await eventually(async () => {
      const [workerA, workerB] = await Promise.all(workers.map(spansOf));
      const spans = [...exporter.getFinishedSpans().map(spanRecord), ...workerA!, ...workerB!].filter((span) => span.traceId === traceId);
      const index = new Map(spans.map((span) => [span.spanId, span]));
      const jobs = workerA!.some((span) => span.name === 'process send') && workerB!.some((span) => span.name === 'process follow');
      return jobs && spans.every((span) => rootOf(span, index)?.spanId === root.spanId) && { inTrace: spans, byId: index };
    }, 'every span of the trace finished and linked to the root', 15_000, 200);

    // BullMQ's job spans: send processed in worker A, follow in worker B, in the same trace.
    const processSend = inTrace.find((span) => span.name === 'process send' && span.service === 'worker-a');
    const processFollow = inTrace.find((span) => span.name === 'process follow' && span.service === 'worker-b');
    expect(processSend?.attributes).toMatchObject({ [SPAN_ATTRIBUTES.workflowId]: id, [SPAN_ATTRIBUTES.delegationId]: 'main.1' });
    expect(processFollow?.attributes).toMatchObject({ [SPAN_ATTRIBUTES.workflowId]: id, [SPAN_ATTRIBUTES.delegationId]: 'main.1' });
    // process send descends from the attempt's span; process follow descends from process send.
    const ancestors = (span: SpanRecord) => {
      const chain: string[] = [];
      for (let current = byId.get(span.parentSpanId ?? ''); current && chain.length < 50; current = byId.get(current.parentSpanId ?? '')) chain.push(current.name);
      return chain;
    };
    expect(ancestors(processSend!)).toContain('delegation main.1');
    expect(ancestors(processFollow!)).toContain('process send');

    // W3C Trace Context on every A2A call (SendMessage, SubscribeToTask, …), all in this trace.
    const calls = agent.httpRequests.filter((request) => request.url.startsWith('/a2a/'));
    expect(calls.length).toBeGreaterThanOrEqual(2);
    for (const call of calls) expect(call.traceparent, `${call.method} ${call.url}`).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-0[01]$`));
  }, 60_000);
});
