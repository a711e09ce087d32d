import { blockHashChain, V1_BLOCK_KEY_ALGO } from './block-hash';
import { V2_SHA256_64_ALGO, V2_SHA256_ALGO, v2Sha256Chain, v2Sha256x64Chain } from './block-hash-v2';
import type { KvBlockHash } from './kv-events';

type ChainFn = (tokenIds: readonly number[], tokensPerBlock: number, cacheSaltId?: bigint) => KvBlockHash[];

const CHAINS = new Map<string, ChainFn>([
  [V1_BLOCK_KEY_ALGO, (ids, tpb, salt) => blockHashChain(ids, tpb, undefined, salt)],
  [V2_SHA256_ALGO, v2Sha256Chain],
  [V2_SHA256_64_ALGO, v2Sha256x64Chain],
]);

/** Every `kv_cache_hash_algo` a TensorRT-LLM worker may announce. */
export const KV_HASH_ALGOS: readonly string[] = [...CHAINS.keys()];

export function isKvHashAlgo(name: string): boolean {
  return CHAINS.has(name);
}

/**
 * A prompt's chain of block keys in the given algorithm (the last token is never in a block
 * key), salted with a request's cache salt id when given; undefined for an unknown algorithm.
 */
export function blockKeyChain(algo: string, tokenIds: readonly number[], tokensPerBlock: number, cacheSaltId?: bigint): KvBlockHash[] | undefined {
  return CHAINS.get(algo)?.(tokenIds, tokensPerBlock, cacheSaltId);
}
