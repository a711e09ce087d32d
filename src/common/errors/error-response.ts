import { HttpException, Logger } from '@nestjs/common';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import { REQUEST_ID_HEADER } from '../constants';
import { HttpApiError } from './http-api-error';
import { errorBodyOf, streamErrorEvent, type ApiShape } from './api-shape';

interface FastifyLikeError {
  statusCode?: number;
  code?: string;
  message: string;
}

/** Any error as the HttpApiError the client gets. */
export function toOpenAiError(err: unknown): HttpApiError {
  if (err instanceof HttpApiError) return err;
  // Fastify's own errors (body parsing, size limit) reach Nest wrapped, the original as cause.
  const cause = err instanceof HttpException ? (err.cause as FastifyLikeError | undefined) : undefined;
  if (err instanceof HttpException && !cause?.code) {
    const status = err.getStatus();
    return new HttpApiError(status, status === 404 ? 'not found' : err.message);
  }
  const e = cause ?? (err as FastifyLikeError);
  if (e?.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e?.statusCode === 413) {
    return new HttpApiError(413, 'request body too large', { code: 'request_too_large' });
  }
  if (e?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || e?.statusCode === 415) {
    return new HttpApiError(415, 'the request body must be JSON (content-type: application/json)', { code: 'unsupported_media_type' });
  }
  if (e instanceof SyntaxError || e?.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    // JSON.parse's own words (position of the error) are meant for whoever wrote the body.
    return new HttpApiError(400, `malformed JSON body: ${e.message}`, { code: 'invalid_json' });
  }
  if (e?.code?.startsWith('FST_ERR_CTP')) {
    return new HttpApiError(400, 'malformed request body', { code: 'invalid_body' });
  }
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    // Fastify's and Node's messages name their internals: the status alone speaks to the client.
    return new HttpApiError(e.statusCode, STATUS_CODES[e.statusCode]?.toLowerCase() ?? 'bad request');
  }
  return new HttpApiError(500, 'internal router error', { code: 'internal_error' });
}

/**
 * Writes the error once, as JSON before any byte of the answer was sent, or as a final SSE
 * error event when a stream already started; logs it once. `shape` is the API the route
 * speaks (OpenAI's error body, or Anthropic's on the Messages API routes).
 */
export function writeApiError(res: ServerResponse, err: unknown, logger: Logger, requestId?: string, shape: ApiShape = 'openai'): void {
  const error = toOpenAiError(err);
  const status = error.getStatus();
  const tag = requestId ? `[${requestId}] ` : '';
  if (status >= 500 && !(err instanceof HttpApiError)) logger.error(`${tag}${(err as Error)?.stack ?? String(err)}`);
  else logger.warn(`${tag}${status} ${error.body.error.message}`);
  if (res.writableEnded || res.destroyed) return;
  if (res.headersSent) {
    res.end(streamErrorEvent(error, shape));
    return;
  }
  const headers: Record<string, string> = { 'content-type': 'application/json', ...error.headers };
  if (requestId) headers[REQUEST_ID_HEADER] = requestId;
  res.writeHead(status, headers);
  res.end(JSON.stringify(errorBodyOf(error, shape)));
}
