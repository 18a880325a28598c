/**
 * `withSpan` with no tracer provider registered runs its work without the OpenTelemetry API's no-op tracer (no
 * tracer, span or context made per call, attributes not built), and with one registered, by `startTracing` or by
 * the application through the API, records the same spans as before.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ProxyTracerProvider, context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { SPAN_ATTRIBUTES, delegationSpan, startTracing, withSpan } from '../src/index.ts';

afterEach(() => {
  vi.restoreAllMocks();
  trace.disable();
  context.disable();
});

describe('withSpan with no tracer provider registered', () => {
  it('asks the API for no tracer and builds no attributes, and gives back what the work gives', async () => {
    const getTracer = vi.spyOn(ProxyTracerProvider.prototype, 'getTracer');
    const attributes = vi.fn(() => ({ a: 1 }));
    await fc.assert(
      fc.asyncProperty(fc.anything(), fc.boolean(), async (value, fails) => {
        const work = async () => {
          if (fails) throw new Error('work failed', { cause: value });
          return value;
        };
        const outcome = await withSpan('workflow.start', attributes, work).then(
          (result) => ({ result }),
          (error: Error) => ({ error }),
        );
        if (fails) expect((outcome as { error: Error }).error.cause).toBe(value);
        else expect((outcome as { result: unknown }).result).toBe(value);
      }),
      { numRuns: 50 },
    );
    await delegationSpan({ workflowId: 'w', delegationId: 'main.1', attempt: 1 }, async () => undefined);
    expect(getTracer).not.toHaveBeenCalled();
    expect(attributes).not.toHaveBeenCalled();
  });

  it('hands the work a span that records nothing and leaves no span active', async () => {
    await withSpan('workflow.start', {}, async (span) => {
      expect(span.isRecording()).toBe(false);
      expect(trace.getActiveSpan()).toBeUndefined();
      span.setAttribute('ignored', 1);
      span.end();
    });
  });
});

describe('withSpan with a tracer provider registered', () => {
  it('records spans with their attributes under startTracing', async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = startTracing({ serviceName: 'test', spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    try {
      await withSpan('workflow.start', { [SPAN_ATTRIBUTES.workflowId]: 'w1' }, () =>
        delegationSpan({ workflowId: 'w1', delegationId: 'main.1', step: 'main', attempt: '2' }, async (span) => {
          expect(span.isRecording()).toBe(true);
          expect(trace.getActiveSpan()).toBe(span);
        }),
      );
      const spans = exporter.getFinishedSpans();
      expect(spans.map((span) => span.name)).toEqual(['delegation main.1', 'workflow.start']);
      expect(spans[0]!.attributes).toEqual({ [SPAN_ATTRIBUTES.workflowId]: 'w1', [SPAN_ATTRIBUTES.delegationId]: 'main.1', [SPAN_ATTRIBUTES.step]: 'main', [SPAN_ATTRIBUTES.attempt]: 2 });
      expect(spans[0]!.parentSpanContext?.spanId).toBe(spans[1]!.spanContext().spanId);
    } finally {
      await tracing.shutdown();
    }
  });

  it('records spans of a provider the application registered through the API, and a thrown error', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    expect(trace.setGlobalTracerProvider(provider)).toBe(true);
    await expect(withSpan('workflow.reply', () => ({ [SPAN_ATTRIBUTES.workflowId]: 'w2' }), () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe('workflow.reply');
    expect(span?.attributes).toEqual({ [SPAN_ATTRIBUTES.workflowId]: 'w2' });
    expect(span?.status.message).toBe('refused');
    await provider.shutdown();
  });
});
