import { isObject } from './json';

/**
 * The message of a worker's (or the router's) error body, whatever its shape: OpenAI's
 * `{"error": {"message"}}`, TensorRT-LLM's `{"object": "error", "message"}`, FastAPI's
 * `{"detail"}`, Anthropic's envelope. A body of no known shape gives the status alone, so
 * nothing else of it (a worker's page, its address) reaches the client.
 */
export function workerErrorMessage(status: number, text: string): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (isObject(body)) {
    const inner = body.error;
    if (isObject(inner) && typeof inner.message === 'string' && inner.message) return inner.message;
    if (typeof inner === 'string' && inner) return inner;
    if (typeof body.message === 'string' && body.message) return body.message;
    if (typeof body.detail === 'string' && body.detail) return body.detail;
    if (body.detail !== undefined) return JSON.stringify(body.detail);
  }
  return `the server refused the request (HTTP ${status})`;
}
