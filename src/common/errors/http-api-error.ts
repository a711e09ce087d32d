import { HttpException } from '@nestjs/common';

export type OpenAiErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'upstream_error'
  | 'service_unavailable'
  | 'timeout_error'
  | 'server_error';

export interface OpenAiErrorBody {
  error: { message: string; type: OpenAiErrorType; param: string | null; code: string | null };
}

/** An error the client sees as OpenAI-style JSON `{"error": {...}}` with its HTTP status. */
export class HttpApiError extends HttpException {
  readonly body: OpenAiErrorBody;

  constructor(
    status: number,
    message: string,
    options: { type?: OpenAiErrorType; param?: string | null; code?: string | null; headers?: Record<string, string> } = {},
  ) {
    const body: OpenAiErrorBody = {
      error: {
        message,
        type: options.type ?? defaultType(status),
        param: options.param ?? null,
        code: options.code ?? null,
      },
    };
    super(body, status);
    this.body = body;
    this.headers = options.headers ?? {};
  }

  readonly headers: Record<string, string>;
}

export function defaultType(status: number): OpenAiErrorType {
  if (status === 401) return 'authentication_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 502) return 'upstream_error';
  if (status === 503) return 'service_unavailable';
  if (status === 504) return 'timeout_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

export function invalidRequest(message: string, param: string | null, code = 'invalid_value'): HttpApiError {
  return new HttpApiError(400, message, { param, code });
}
