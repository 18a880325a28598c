/**
 * W3C Trace Context for outgoing A2A calls, through `@opentelemetry/api` only: whoever runs an OpenTelemetry SDK
 * (and registers a propagator) gets `traceparent` / `tracestate` on every request; without one the API is a no-op
 * and no header is added.
 */
import { context, propagation } from '@opentelemetry/api';

/** `traceparent` (and `tracestate`) of the active span, for an outgoing request; `{}` when there is none. */
export function traceContextHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}
