export const REDACTED = '***';

/** Words that make a key secret wherever they appear in it (`admin.token`, `db_password`). */
const SECRET_WORDS = new Set(['token', 'password', 'passwd', 'secret', 'credential', 'credentials', 'apikey', 'authorization']);

/**
 * Whether a config key names a secret. Keys are split into words (snake, kebab or camel
 * case): any word above, or `key` as the last word (`api_key`, `privateKey`), marks a
 * secret; `tokens_per_block`, `use_tokens` and `key_prefix` are not secrets.
 */
export function isSecretKey(key: string): boolean {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  if (words.some((w) => SECRET_WORDS.has(w))) return true;
  return words[words.length - 1] === 'key';
}

/** A deep copy with secret values replaced and passwords taken out of URLs. */
export function redactSecrets(value: unknown, key?: string): unknown {
  if (key !== undefined && isSecretKey(key) && value !== undefined && value !== null) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactSecrets(v, k)]));
  }
  if (typeof value === 'string') return redactUrlPassword(value);
  return value;
}

function redactUrlPassword(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/:@\s]*):[^/@\s]*@/i, `$1:${REDACTED}@`);
}
