import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { APP_CONFIG, type AppConfig } from '../../config';
import { MetricsService } from '../metrics/metrics.service';
import { InFlightRequests } from './in-flight-requests';
import { requestContextStorage, type RequestContext } from './request-context';
import { logsPerRequest } from '../logging/log-levels';
import { REQUEST_ID_HEADER } from '../../common';

declare module 'fastify' {
  interface FastifyRequest {
    routerContext: RequestContext | null;
  }
}


/**
 * Fastify hooks of every request: the request id goes on every answer (proxied, error, 404,
 * admin), the request's arrival is recorded for the phase timings, and each answer is
 * counted by route template.
 *
 * At debug and trace level the handler also runs in an async context, so that every log
 * line written during the request, by any module, carries its id. It is off at other levels
 * because on Node 20 an active AsyncLocalStorage costs every promise of every request
 * (measured: some 15% of the router's CPU per request); there, request-path lines carry
 * the id by the `[id] message` convention or a `reqId` field.
 */
@Injectable()
export class RequestContextHooks implements OnModuleInit {
  private readonly asyncContext: boolean;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: MetricsService,
    private readonly inFlight: InFlightRequests,
  ) {
    this.asyncContext = logsPerRequest(config.logging.level);
  }

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify || typeof fastify.addHook !== 'function') return;
    const { metrics, inFlight } = this;
    fastify.decorateRequest('routerContext', null);
    fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const ctx: RequestContext = { requestId: request.id, arrivedAt: performance.now() };
      request.routerContext = ctx;
      inFlight.start(ctx);
      // Fastify's own answers; hijacked ones (the OpenAI routes, errors written by the
      // exception filter) write it in their head themselves, which keeps Node's fast path.
      reply.header(REQUEST_ID_HEADER, request.id);
      done();
    });
    if (this.asyncContext) {
      // Entered after body parsing: stream events of a keep-alive socket belong to no request.
      fastify.addHook('preHandler', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
        const ctx = request.routerContext;
        if (ctx) requestContextStorage.run(ctx, done);
        else done();
      });
    }
    fastify.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      metrics.httpResponse(request.method, request.routeOptions.url, reply.statusCode);
      const ctx = request.routerContext;
      // The flow reports its end in the same tick as its last write, before this runs, but
      // leave it that tick's I/O callbacks too.
      if (ctx) inFlight.endSoon(ctx);
      done();
    });
  }
}
