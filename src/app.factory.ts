import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { LoggerService, LogLevel, ModuleMetadata } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { mountAdminDocsOnMainApp } from './admin/admin-docs';
import { AppModule } from './app.module';
import type { AppConfig } from './config';
import { clientErrorHandler, frameworkErrors } from './common/errors/framework-errors';
import { jsonBodyParser } from './common/json-body-parser';
import { resolveAppLogger } from './observability/logging/app-logger';
import type { DestinationStream } from 'pino';
import { REQUEST_ID_HEADER } from './common';

export interface CreateRouterAppOptions {
  imports?: ModuleMetadata['imports'];
  /** A LoggerService is used as is; a level list or false narrows the app's pino logger. */
  logger?: LoggerService | LogLevel[] | false;
  /** Where the app's log lines go (stdout by default). */
  logDestination?: DestinationStream;
}


/** Builds (but does not start listening) the router app on Fastify. */
export async function createRouterApp(config: AppConfig, options: CreateRouterAppOptions = {}): Promise<NestFastifyApplication> {
  const clientBodyMs = config.timeouts.client_body_s * 1000;
  // Node wants the head's deadline within the whole request's.
  const clientHeadersMs = Math.min(config.timeouts.client_headers_s * 1000, clientBodyMs);
  const adapter = new FastifyAdapter({
    bodyLimit: config.limits.max_body_bytes,
    // genReqId reads x-request-id itself and checks it: Fastify would take the header unchecked.
    requestIdHeader: false,
    genReqId: (req: IncomingMessage) => requestIdOf(req),
    // Node's request timeout ends when the request is received: answers may take longer.
    requestTimeout: clientBodyMs,
    http: { headersTimeout: clientHeadersMs, connectionsCheckingInterval: Math.max(100, Math.min(1_000, clientHeadersMs / 4)) } as never,
    clientErrorHandler,
    frameworkErrors,
    // Server ids are derived from URLs: Kubernetes host names are long (the default is 100).
    routerOptions: { maxParamLength: 2_048 },
    keepAliveTimeout: 65_000,
    // By the time the server closes, the drain has let in-flight requests finish.
    forceCloseConnections: true,
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot({ config, imports: options.imports }),
    adapter,
    { logger: await resolveAppLogger(config.logging, { logger: options.logger, destination: options.logDestination }), abortOnError: false },
  );
  // Before init, where Nest would register its own (per request, a fresh closure over secure-json-parse).
  app.useBodyParser('application/json', { bodyLimit: config.limits.max_body_bytes }, jsonBodyParser(app.getHttpAdapter().getInstance()));
  await mountAdminDocsOnMainApp(app, config);
  (app.getHttpServer() as Server).maxConnections = config.limits.max_connections;
  return app;
}

function requestIdOf(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  const id = Array.isArray(given) ? given[0] : given;
  // Bounded and printable, since it goes into logs and upstream headers.
  return id && /^[\w.:-]{1,128}$/.test(id) ? id : randomUUID();
}
