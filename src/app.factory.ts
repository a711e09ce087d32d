import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { LoggerService, LogLevel, ModuleMetadata } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { mountAdminDocsOnMainApp } from './admin/admin-docs';
import { AppModule } from './app.module';
import type { RouterConfig } from './config';
import { resolveAppLogger } from './observability/logging/app-logger';
import type { DestinationStream } from 'pino';

export interface CreateRouterAppOptions {
  imports?: ModuleMetadata['imports'];
  /** A LoggerService is used as is; a level list or false narrows the app's pino logger. */
  logger?: LoggerService | LogLevel[] | false;
  /** Where the app's log lines go (stdout by default). */
  logDestination?: DestinationStream;
}

const REQUEST_ID_HEADER = 'x-request-id';

/** Builds (but does not start listening) the router app on Fastify. */
export async function createRouterApp(config: RouterConfig, options: CreateRouterAppOptions = {}): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: config.limits.max_body_bytes,
    // genReqId reads x-request-id itself and checks it: Fastify would take the header unchecked.
    requestIdHeader: false,
    genReqId: (req: IncomingMessage) => requestIdOf(req),
    // The workers keep connections open too; never cut a long generation on our side.
    requestTimeout: 0,
    keepAliveTimeout: 65_000,
    // By the time the server closes, the drain has let in-flight requests finish.
    forceCloseConnections: true,
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot({ config, imports: options.imports }),
    adapter,
    { logger: await resolveAppLogger(config.logging, { logger: options.logger, destination: options.logDestination }), abortOnError: false },
  );
  await mountAdminDocsOnMainApp(app, config);
  return app;
}

function requestIdOf(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  const id = Array.isArray(given) ? given[0] : given;
  // Bounded and printable, since it goes into logs and upstream headers.
  return id && /^[\w.:-]{1,128}$/.test(id) ? id : randomUUID();
}
