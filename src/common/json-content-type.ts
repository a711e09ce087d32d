import { HttpApiError } from './errors/http-api-error';

/**
 * JSON bodies only: a form post or text/plain body is what a cross-site page can send without
 * a preflight, so those are refused (415) even when they parse.
 */
export function requireJsonContentType(contentType: string | undefined): void {
  if (contentType !== undefined && isJsonMediaType(contentType)) return;
  throw new HttpApiError(415, 'the request body must be JSON (content-type: application/json)', { code: 'unsupported_media_type' });
}

function isJsonMediaType(contentType: string): boolean {
  if (contentType === 'application/json') return true;
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === 'application/json';
}
