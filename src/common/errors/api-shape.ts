import { HttpApiError } from './http-api-error';

/**
 * The error shape a route's clients parse: OpenAI's `{"error": {message, type, param, code}}`,
 * or Anthropic's `{"type": "error", "error": {type, message}}` on the Messages API routes
 * (README "Anthropic Messages API").
 */
export type ApiShape = 'openai' | 'anthropic';

const ANTHROPIC_PREFIX = '/v1/messages';

/** The shape of the errors of a request path (a query string may follow). */
export function apiShapeOf(url: string | undefined): ApiShape {
  if (!url || !url.startsWith(ANTHROPIC_PREFIX)) return 'openai';
  const next = url.charCodeAt(ANTHROPIC_PREFIX.length);
  // '/v1/messages', '/v1/messages/...', '/v1/messages?...', not '/v1/messagesX'.
  return Number.isNaN(next) || next === 0x2f || next === 0x3f ? 'anthropic' : 'openai';
}

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error'
  | 'timeout_error';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; message: string };
}

/**
 * Anthropic's error type for a status: its documented pairs, every other 4xx an
 * invalid_request_error; 503 (no server, starting, shutting down) an overloaded_error and 504
 * a timeout_error, keeping their status; every other 5xx an api_error.
 */
export function anthropicErrorType(status: number): AnthropicErrorType {
  switch (status) {
    case 401: return 'authentication_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 413: return 'request_too_large';
    case 429: return 'rate_limit_error';
    case 503: case 529: return 'overloaded_error';
    case 504: return 'timeout_error';
    default: return status < 500 ? 'invalid_request_error' : 'api_error';
  }
}

export function anthropicErrorBody(status: number, message: string): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(status), message } };
}

/** The body of an error in the given shape. */
export function errorBodyOf(error: HttpApiError, shape: ApiShape): object {
  return shape === 'anthropic' ? anthropicErrorBody(error.getStatus(), error.body.error.message) : error.body;
}

/**
 * The error event that ends a stream already started: OpenAI clients read a `data:` line,
 * Anthropic clients an `event: error`.
 */
export function streamErrorEvent(error: HttpApiError, shape: ApiShape): string {
  const body = JSON.stringify(errorBodyOf(error, shape));
  return shape === 'anthropic' ? `event: error\ndata: ${body}\n\n` : `data: ${body}\n\n`;
}
