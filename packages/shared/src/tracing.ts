/**
 * OpenTelemetry tracing, off unless configured. One trace per workflow:
 *
 *   workflow.start (producer)                         ← the producer's span is the parent
 *     └ delegation <delegationId> (one per attempt)   ← attributes below
 *         └ add <queue>.<job> → process <queue>       ← BullMQ's own spans (bullmq-otel), per queue job:
 *             send, follow, reconcile, verify, compensate; the context travels in the job's
 *             options (BullMQ telemetry metadata), so it crosses worker processes through Redis
 *             └ A2A calls carry `traceparent` / `tracestate` (W3C Trace Context) from the active span
 *
 * Configured with the standard variables: on when `OTEL_TRACES_EXPORTER` is `otlp` or `console`, or
 * an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`) is set; `OTEL_SDK_DISABLED=true`
 * wins. The OTLP exporter reads its own `OTEL_EXPORTER_OTLP_*` variables (headers, timeout, protocol).
 * When off, nothing is registered: `withSpan` runs its work without a span (see `tracerProviderRegistered`) and
 * `traceContextHeaders()` (`@durable-a2a/a2a`, which A2A calls use) returns `{}`.
 */
import { context, propagation, trace, INVALID_SPAN_CONTEXT, ProxyTracerProvider, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, TracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace';
import type { Telemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import { z } from 'zod';

/** Tracer (instrumentation scope) name of durable-a2a's own spans; BullMQ's spans use the same. */
export const TRACER_NAME = 'durable-a2a';

/** Span attribute names (besides BullMQ's own `bullmq.*`). */
export const SPAN_ATTRIBUTES = {
  workflowId: 'durable_a2a.workflow.id',
  delegationId: 'durable_a2a.delegation.id',
  step: 'durable_a2a.step',
  attempt: 'durable_a2a.attempt',
  kind: 'durable_a2a.delegation.kind',
  agentCardUrl: 'a2a.agent.card_url',
  messageId: 'a2a.message.id',
} as const;

/** The standard OTEL_* variables tracing reads (the OTLP exporter reads the rest itself). */
export const TracingEnvironmentSchema = z.object({
  OTEL_SDK_DISABLED: z.enum(['true', 'false']).optional(),
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'console', 'none']).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
});
export type TracingEnvironment = z.infer<typeof TracingEnvironmentSchema>;

export interface TracingOptions {
  /** `service.name` unless OTEL_SERVICE_NAME says otherwise (e.g. `durable-a2a-workers`). */
  serviceName: string;
  /** The process environment (parsed here with zod). Default `{}`: off. */
  environment?: Record<string, string | undefined>;
  /** Span processors to use instead of the configured exporter (tests: an InMemorySpanExporter); turns tracing on. */
  spanProcessors?: SpanProcessor[];
}

export interface Tracing {
  enabled: boolean;
  /** For BullMQ `Queue` and `Worker` options (`telemetry`); undefined when off. */
  telemetry?: Telemetry;
  /** Flushes and unregisters (a later `startTracing` may register again). */
  shutdown(): Promise<void>;
}

function exporterProcessors(environment: TracingEnvironment): SpanProcessor[] {
  if (environment.OTEL_SDK_DISABLED === 'true' || environment.OTEL_TRACES_EXPORTER === 'none') return [];
  if (environment.OTEL_TRACES_EXPORTER === 'console') return [new BatchSpanProcessor({ exporter: new ConsoleSpanExporter() })];
  const endpoint = environment.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? environment.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (environment.OTEL_TRACES_EXPORTER === 'otlp' || endpoint) return [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })];
  return [];
}

/**
 * Starts tracing for this process when configured (see the header): registers a tracer provider,
 * the AsyncLocalStorage context manager and the W3C Trace Context propagator globally.
 * Throws a ZodError naming a malformed OTEL_* variable.
 */
export function startTracing(options: TracingOptions): Tracing {
  const environment = TracingEnvironmentSchema.parse(options.environment ?? {});
  const spanProcessors = options.spanProcessors ?? exporterProcessors(environment);
  if (spanProcessors.length === 0) return { enabled: false, shutdown: async () => undefined };
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': environment.OTEL_SERVICE_NAME ?? options.serviceName }),
    spanProcessors,
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    enabled: true,
    telemetry: new BullMQOtel({ tracerName: TRACER_NAME }),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/** The span `withSpan` hands its work while no tracer provider is registered: it records nothing, as the API's no-op one. */
const UNTRACED: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * True when a tracer provider is registered: by `startTracing`, or by the embedding application through the
 * OpenTelemetry API (`trace.setGlobalTracerProvider` sets the API's proxy provider's delegate, which is what this
 * reads). Unregistered, the API's no-op tracer would still allocate a tracer, a span and a context per span and
 * record nothing (about 3 % of a producer's CPU per `delegate`, two spans each); nothing propagates either, since
 * the no-op span carries the parent's context, which is the active one already.
 */
function tracerProviderRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer(TRACER_NAME) !== undefined;
}

/**
 * Runs `work` in a new active span (child of the active one); records a thrown error and rethrows it. With no
 * tracer provider registered, runs `work` with a span that records nothing, in the active context as it is.
 * `attributes` may be a function, called only when a span is made.
 */
export async function withSpan<T>(name: string, attributes: Attributes | (() => Attributes), work: (span: Span) => Promise<T>): Promise<T> {
  if (!tracerProviderRegistered()) return work(UNTRACED);
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, { attributes: typeof attributes === 'function' ? attributes() : attributes }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** What names a delegation attempt in its span. */
export interface DelegationSpanInput {
  workflowId: string;
  delegationId: string;
  step?: string;
  attempt?: number | string;
  kind?: string;
  agentCardUrl?: string;
  messageId?: string;
}

/** Span attributes of a delegation attempt (undefined fields left out). */
export function delegationAttributes(input: DelegationSpanInput): Attributes {
  const attributes: Attributes = {};
  for (const [field, name] of Object.entries(SPAN_ATTRIBUTES) as [keyof DelegationSpanInput, string][]) {
    const value = input[field];
    if (value !== undefined && value !== '') attributes[name] = field === 'attempt' ? Number(value) : String(value);
  }
  return attributes;
}

/**
 * The span of one delegation attempt: `delegation <delegationId>`. Run the attempt's first
 * enqueue inside it, so every queue job of the attempt (and every A2A call) descends from it.
 */
export function delegationSpan<T>(input: DelegationSpanInput, work: (span: Span) => Promise<T>): Promise<T> {
  return withSpan(`delegation ${input.delegationId}`, () => delegationAttributes(input), work);
}

/** Adds the workflow and delegation of a job's data to the active span (BullMQ's `process <queue>` span). */
export function annotateActiveSpan(jobData: unknown): void {
  const span = trace.getActiveSpan();
  if (!span || typeof jobData !== 'object' || jobData === null) return;
  const { workflowId, delegationId } = jobData as { workflowId?: unknown; delegationId?: unknown };
  if (typeof workflowId === 'string') span.setAttribute(SPAN_ATTRIBUTES.workflowId, workflowId);
  if (typeof delegationId === 'string') span.setAttribute(SPAN_ATTRIBUTES.delegationId, delegationId);
}
