import { createHash } from 'node:crypto';

/** The names servers advertise in `/server_info` (and tag events with) for these algorithms. */
export const V2_SHA256_ALGO = 'v2_sha256';
export const V2_SHA256_64_ALGO = 'v2_sha256_64';

/**
 * The reuse scope of a chain (KV cache manager v2): a mask byte with one bit per field that is
 * set (bit 0 LoRA id, bit 1 cache salt id), then each set field as a little-endian uint64.
 */
function scopeBytes(loraId: bigint | undefined, saltId: bigint | undefined): Buffer {
  const fields = [loraId, saltId];
  let mask = 0;
  fields.forEach((f, i) => {
    if (f !== undefined) mask |= 1 << i;
  });
  const out = Buffer.alloc(1 + 8 * fields.filter((f) => f !== undefined).length);
  out[0] = mask;
  let at = 1;
  for (const f of fields) {
    if (f === undefined) continue;
    out.writeBigUInt64LE(BigInt.asUintN(64, f), at);
    at += 8;
  }
  return out;
}

/** The root key of a chain: SHA-256 of its reuse scope. */
export function v2RootKey(saltId?: bigint, loraId?: bigint): Buffer {
  return createHash('sha256').update(scopeBytes(loraId, saltId)).digest();
}

/** One block's key: SHA-256 of the parent key followed by each token id as a little-endian uint32. */
export function v2BlockKey(parentKey: Buffer, tokens: ArrayLike<number>, start = 0, end = tokens.length): Buffer {
  const bytes = Buffer.allocUnsafe((end - start) * 4);
  for (let i = start; i < end; i++) bytes.writeUInt32LE(tokens[i] >>> 0, (i - start) * 4);
  return createHash('sha256').update(parentKey).update(bytes).digest();
}

/**
 * The v2 key chain of a prompt: blocks of `tokensPerBlock` over its first N-1 tokens (the last
 * token is never part of a block key), the trailing partial block included, each block keyed
 * on the previous one and the first on the root of the request's reuse scope.
 */
export function v2KeyChain(tokenIds: ArrayLike<number>, tokensPerBlock: number, saltId?: bigint): Buffer[] {
  return extendV2KeyChain([], tokenIds, tokensPerBlock, saltId);
}

/** `keys`, the keys of the prompt's first `keys.length` full blocks, continued in place to its end. */
export function extendV2KeyChain(keys: Buffer[], tokenIds: ArrayLike<number>, tokensPerBlock: number, saltId?: bigint): Buffer[] {
  if (!Number.isInteger(tokensPerBlock) || tokensPerBlock <= 0) {
    throw new RangeError(`tokensPerBlock must be a positive integer, got ${tokensPerBlock}`);
  }
  const end = tokenIds.length - 1;
  let parent = keys.length ? keys[keys.length - 1] : v2RootKey(saltId);
  for (let start = keys.length * tokensPerBlock; start < end; start += tokensPerBlock) {
    parent = v2BlockKey(parent, tokenIds, start, Math.min(start + tokensPerBlock, end));
    keys.push(parent);
  }
  return keys;
}

/** `v2_sha256`: each key as lowercase hex, as workers publish it. */
export function v2Sha256Chain(tokenIds: ArrayLike<number>, tokensPerBlock: number, saltId?: bigint): string[] {
  return v2KeyChain(tokenIds, tokensPerBlock, saltId).map((k) => k.toString('hex'));
}

/** `v2_sha256_64`: each key's first 8 bytes read big-endian, an unsigned 64-bit integer. */
export function v2Sha256x64Chain(tokenIds: ArrayLike<number>, tokensPerBlock: number, saltId?: bigint): bigint[] {
  return v2KeyChain(tokenIds, tokensPerBlock, saltId).map((k) => k.readBigUInt64BE(0));
}
