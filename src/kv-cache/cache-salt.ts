import { blake3 } from '@noble/hashes/blake3';

const encoder = new TextEncoder();

/**
 * The id a request's `cache_salt` gives its KV cache namespace, as TensorRT-LLM's workers
 * derive it: the first 8 bytes of the BLAKE3 digest of the UTF-8 salt, read little-endian.
 * The salt is mixed into the first block of every chain, so salted and unsalted requests
 * (or two tenants) never share a block key.
 */
export function cacheSaltId(salt: string): bigint {
  const digest = blake3(encoder.encode(salt), { dkLen: 8 });
  let id = 0n;
  for (let i = 7; i >= 0; i--) id = (id << 8n) | BigInt(digest[i]);
  return id;
}

/** The salt id of a request body's `cache_salt`, or undefined when it has none. */
export function cacheSaltIdOf(body: Readonly<Record<string, unknown>>): bigint | undefined {
  const salt = body.cache_salt;
  return typeof salt === 'string' ? cacheSaltId(salt) : undefined;
}
