/**
 * OpenTelemetry traces, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/OPERATIONS.md
 * "Traces"): a span per request (the route template, the org id hashed, the status), child spans
 * for database statements (their kind, never their parameters), jobs and imports, exported over
 * OTLP/HTTP. A W3C `traceparent` header continues the caller's trace; log lines carry trace_id.
 * Off, every helper here is a no-op of a few nanoseconds.
 */
import { SpanKind, SpanStatusCode, context, propagation, trace, type Attributes, type Context, type Span } from "@opentelemetry/api";

let enabled = false;
let shutdownProvider: (() => Promise<void>) | null = null;

/** Whether spans are recorded (tracing was started in this process). */
export function tracingEnabled(): boolean {
  return enabled;
}

export interface TracingOptions {
  /** The collector's base URL (OTEL_EXPORTER_OTLP_ENDPOINT); spans go to `{endpoint}/v1/traces`. */
  endpoint: string;
  serviceName?: string;
  serviceVersion?: string;
}

/**
 * Registers the process's tracer provider, context manager and W3C propagator. Loads the SDK
 * only then: a deployment without a collector never evaluates it.
 */
export async function startTracing(opts: TracingOptions): Promise<{ flush(): Promise<void>; shutdown(): Promise<void> }> {
  const [{ TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { resourceFromAttributes }] = await Promise.all([
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/context-async-hooks"),
    import("@opentelemetry/core"),
    import("@opentelemetry/resources"),
  ]);
  const exporter = new OTLPTraceExporter({ url: `${opts.endpoint.replace(/\/+$/, "")}/v1/traces` });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": opts.serviceName ?? "commitops", ...(opts.serviceVersion ? { "service.version": opts.serviceVersion } : {}) }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000 })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  enabled = true;
  shutdownProvider = () => provider.shutdown();
  return {
    flush: () => provider.forceFlush(),
    async shutdown() {
      enabled = false;
      await shutdownProvider?.().catch(() => {});
      shutdownProvider = null;
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

const tracer = () => trace.getTracer("commitops");

/** Runs `fn` in a span (a child of the active one), ended when `fn` settles; a failure is recorded on it. Off: `fn()` alone. */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span | null) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  if (!enabled) return fn(null);
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (e) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.name : "error" });
      throw e;
    } finally {
      span.end();
    }
  });
}

/** The caller's context from a request's `traceparent` (and `tracestate`) headers. */
export function incomingContext(headers: Headers): Context {
  return propagation.extract(context.active(), headers, {
    get: (h, key) => h.get(key) ?? undefined,
    keys: (h) => [...h.keys()],
  });
}

/** A server span for one request, in the caller's trace when it sent one; `fn` runs with it active. */
export function inRequestSpan<T>(request: Request, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = incomingContext(request.headers);
  const span = tracer().startSpan(`${request.method}`, { kind: SpanKind.SERVER, attributes: { "http.request.method": request.method } }, parent);
  return context.with(trace.setSpan(parent, span), () => fn(span));
}

/** The statement's kind (its first keyword), the only part of its text a span carries. */
export function statementKind(text: string): string {
  const m = /^\s*(?:--[^\n]*\n\s*)*(\w+)/.exec(text);
  return (m?.[1] ?? "statement").toUpperCase();
}

/** The active span's trace and span ids, for a log line (none when tracing is off or nothing is active). */
export function activeTraceIds(): { trace_id: string; span_id: string } | null {
  if (!enabled) return null;
  const span = trace.getActiveSpan();
  if (!span) return null;
  const c = span.spanContext();
  return { trace_id: c.traceId, span_id: c.spanId };
}

export { SpanKind, SpanStatusCode };
