import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ROOT_CONTEXT, defaultTextMapGetter, type Context, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { ObjectSlot } from '../../common/object-slot';
import { APP_CONFIG, type AppConfig } from '../../config';
import type { RequestKind } from '../../routing';
import { InFlightRequests } from '../context/in-flight-requests';
import { RequestTrace } from './request-trace';
import { tracingOptions } from './tracing-options';

/**
 * OpenTelemetry traces of the disagg flow, exported over OTLP/HTTP. Off unless an endpoint
 * is configured; then `startRequest` is a single check returning undefined, and the flow
 * skips every tracing call.
 */
@Injectable()
export class RequestTracing implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Tracing');
  private readonly provider?: BasicTracerProvider;
  private readonly tracer?: Tracer;
  private readonly propagator = new W3CTraceContextPropagator();
  /** The client's trace context, read by a hook that exists only while tracing is on. */
  private readonly parents = new ObjectSlot<Context>('trace parent');

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly inFlight: InFlightRequests,
  ) {
    const options = tracingOptions(config);
    if (!options) return;
    const resource = defaultResource()
      .merge(resourceFromAttributes({ 'service.name': 'disagg-router' }))
      .merge(detectResources({ detectors: [envDetector] }));
    const exporter = new OTLPTraceExporter(options.url ? { url: options.url } : {});
    this.provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
    this.tracer = this.provider.getTracer('disagg-router');
    this.logger.log(`traces exported over OTLP/HTTP to ${options.url ?? 'the OTEL_EXPORTER_OTLP_* endpoint'}`);
  }

  get enabled(): boolean {
    return this.tracer !== undefined;
  }

  onModuleInit(): void {
    if (!this.tracer) return;
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify || typeof fastify.addHook !== 'function') return;
    // preHandler: after onRequest made the request's context.
    fastify.addHook('preHandler', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const ctx = request.routerContext;
      if (ctx && request.headers.traceparent) {
        this.parents.set(ctx, this.propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter));
      }
      done();
    });
  }

  /** The trace of a request entering the disagg flow; undefined while tracing is off. */
  startRequest(kind: RequestKind, requestId: string): RequestTrace | undefined {
    if (!this.tracer) return undefined;
    const ctx = this.inFlight.get(requestId);
    const parent = (ctx && this.parents.get(ctx)) ?? ROOT_CONTEXT;
    const start = ctx ? performance.timeOrigin + ctx.arrivedAt : Date.now();
    return new RequestTrace(this.tracer, this.propagator, parent, kind, requestId, start);
  }

  /** Exports the spans ended so far. */
  async flush(): Promise<void> {
    await this.provider?.forceFlush();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.provider?.shutdown().catch((err: Error) => this.logger.warn(`trace export at shutdown failed: ${err.message}`));
  }
}
