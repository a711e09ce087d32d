import { createHash, timingSafeEqual } from 'node:crypto';

export function tokenDigest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Compares a presented token with the configured one in constant time. Both sides are
 * hashed first, so the comparison always runs on 32 bytes and the token length does not leak.
 */
export function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(tokenDigest(presented), tokenDigest(expected));
}

/** The token of an `Authorization: Bearer <token>` header, if the header has that form. */
export function bearerTokenOf(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(value) : null;
  return match?.[1];
}
