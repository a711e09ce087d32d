import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { apiShapeOf } from './api-shape';
import { writeApiError } from './error-response';

/**
 * Every error that reaches Nest leaves as JSON in the shape of the route's API: OpenAI's, or
 * Anthropic's on the Messages API routes (framework errors too: bad JSON, 413, 415, 404).
 */
@Catch()
export class OpenAiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    const raw = reply.raw;
    if (!reply.sent) reply.hijack();
    writeApiError(raw, exception, this.logger, request?.id, apiShapeOf(request?.url));
  }
}
