import { HttpApiError } from '../common';

/**
 * A worker's 4xx answer as the client gets it: a JSON object (TensorRT-LLM's own error shape
 * or OpenAI's) passes as it is; anything else (an HTML page, plain text, nothing) is wrapped in
 * an OpenAI-style error, since the client was promised JSON.
 */
export function workerErrorBody(role: string, status: number, text: string): string {
  const first = text.charCodeAt(0);
  // '{' (possibly after whitespace): cheap pre-check before parsing.
  if (first === 0x7b || (first <= 0x20 && text.trimStart().startsWith('{'))) {
    try {
      const v = JSON.parse(text) as unknown;
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) return text;
    } catch {
      /* wrapped below */
    }
  }
  return JSON.stringify(new HttpApiError(status, `the ${role} server refused the request (HTTP ${status})`, { code: 'upstream_rejected' }).body);
}
