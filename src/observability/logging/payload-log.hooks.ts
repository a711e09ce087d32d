import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { ServerResponse } from 'node:http';
import { APP_CONFIG, type AppConfig } from '../../config';

/** Answers longer than this are logged cut, with their full length. */
const MAX_LOGGED_BYTES = 64 * 1024;

/**
 * With `logging.log_payloads` on (never by default), one line with each completion request's
 * body and one with its answer (streamed answers as the SSE text). Off, nothing is
 * installed, so the request path pays nothing.
 */
@Injectable()
export class PayloadLogHooks implements OnModuleInit {
  private readonly logger = new Logger('Payload');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  onModuleInit(): void {
    if (!this.config.logging.log_payloads) return;
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify || typeof fastify.addHook !== 'function') return;
    fastify.addHook('preHandler', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      if (request.method === 'POST' && request.url.startsWith('/v1/')) {
        this.logger.log({ msg: 'request payload', reqId: request.id, path: request.url, body: request.body });
        this.captureAnswer(request.id, reply.raw);
      }
      done();
    });
  }

  private captureAnswer(reqId: string, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    let length = 0;
    let kept = 0;
    const keep = (chunk: unknown): void => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      length += buf.length;
      if (kept < MAX_LOGGED_BYTES) {
        const part = buf.subarray(0, MAX_LOGGED_BYTES - kept);
        chunks.push(part);
        kept += part.length;
      }
    };
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk);
      return write(chunk, ...rest);
    }) as ServerResponse['write'];
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      keep(chunk);
      return end(chunk, ...rest);
    }) as ServerResponse['end'];
    res.once('finish', () => {
      // Outside the request's async context here: the id is given explicitly.
      this.logger.log({ msg: 'response payload', reqId, status: res.statusCode, bytes: length, body: Buffer.concat(chunks).toString('utf8') });
    });
  }
}
