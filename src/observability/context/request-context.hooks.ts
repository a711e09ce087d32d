import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { MetricsService } from '../metrics/metrics.service';
import { requestContextStorage, type RequestContext } from './request-context';

declare module 'fastify' {
  interface FastifyRequest {
    routerContext: RequestContext | null;
  }
}

export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * Fastify hooks of every request: the request id goes on every answer (proxied, error, 404,
 * admin), the request context wraps the handler so log lines carry the id, and each answer
 * is counted by route template. The context is entered after body parsing: stream events of
 * a keep-alive socket do not belong to one request.
 */
@Injectable()
export class RequestContextHooks implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: MetricsService,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify || typeof fastify.addHook !== 'function') return;
    const metrics = this.metrics;
    fastify.decorateRequest('routerContext', null);
    fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      request.routerContext = { requestId: request.id, arrivedAt: performance.now() };
      // On the raw response, so hijacked replies written with writeHead carry it too.
      reply.raw.setHeader(REQUEST_ID_HEADER, request.id);
      done();
    });
    fastify.addHook('preHandler', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const ctx = request.routerContext;
      if (ctx) requestContextStorage.run(ctx, done);
      else done();
    });
    fastify.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      metrics.httpResponse(request.method, request.routeOptions.url, reply.statusCode);
      done();
    });
  }
}
