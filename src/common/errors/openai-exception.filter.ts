import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { writeOpenAiError } from './error-response';

/** Every error that reaches Nest leaves as OpenAI-style JSON (or nothing once a stream started). */
@Catch()
export class OpenAiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    const raw = reply.raw;
    if (!reply.sent) reply.hijack();
    writeOpenAiError(raw, exception, this.logger, request?.id);
  }
}
