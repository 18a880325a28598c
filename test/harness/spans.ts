/** Finished spans as plain data, to compare spans from several processes. */
import type { ReadableSpan } from '@opentelemetry/sdk-trace';

/** A finished span as the tracing test compares them (ids in hex). */
export interface SpanRecord {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  service: string;
  attributes: Record<string, unknown>;
}

/** Plain-data form of a finished span. */
export function spanRecord(span: ReadableSpan): SpanRecord {
  return {
    name: span.name,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    service: String(span.resource.attributes['service.name']),
    attributes: { ...span.attributes },
  };
}
