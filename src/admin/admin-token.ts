import { tokenDigest } from '../common/bearer-token';

export { bearerTokenOf, tokenMatches } from '../common/bearer-token';

/** A short, non-reversible name for a token in audit logs. */
export function tokenFingerprint(token: string): string {
  return tokenDigest(token).toString('hex').slice(0, 8);
}
