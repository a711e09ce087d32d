import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { anthropicErrorBody, apiShapeOf } from './api-shape';
import { defaultType, type OpenAiErrorBody } from './http-api-error';

/** An OpenAI-style error body, without the HttpException an HttpApiError carries. */
function errorBody(status: number, message: string, code: string): string {
  const body: OpenAiErrorBody = { error: { message, type: defaultType(status), param: null, code } };
  return JSON.stringify(body);
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (a head or body not received
 * in time, headers too large, a malformed request): answered in the OpenAI shape, then the
 * connection is closed as Node itself would.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let message = 'malformed HTTP request';
  let code = 'bad_request';
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    message = 'the request was not received in time (timeouts.client_headers_s / client_body_s)';
    code = 'request_timeout';
  } else if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    message = 'request headers (or URL) too large';
    code = 'headers_too_large';
  }
  const body = errorBody(status, message, code);
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}

/** Fastify's routing errors (a URL it cannot decode, a path parameter too long). */
export function frameworkErrors(error: Error & { code?: string }, request: FastifyRequest, reply: FastifyReply): void {
  const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
  const status = tooLong ? 414 : 400;
  const message = tooLong ? 'URL path segment too long' : 'the URL is not valid';
  void reply
    .code(status)
    .header('content-type', 'application/json')
    .send(apiShapeOf(request.url) === 'anthropic'
      ? JSON.stringify(anthropicErrorBody(status, message))
      : errorBody(status, message, tooLong ? 'uri_too_long' : 'invalid_url'));
}
