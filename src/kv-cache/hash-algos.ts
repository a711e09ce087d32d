import { blockHashChain, extendBlockHashChain, V1_BLOCK_KEY_ALGO } from './block-hash';
import { extendV2KeyChain, V2_SHA256_64_ALGO, V2_SHA256_ALGO, v2Sha256Chain, v2Sha256x64Chain } from './block-hash-v2';
import type { KvBlockHash } from './kv-events';
import type { TokenIds } from '../common/token-id-array';

type ChainFn = (tokenIds: TokenIds, tokensPerBlock: number, cacheSaltId?: bigint) => KvBlockHash[];

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
export function blockKeyChain(algo: string, tokenIds: TokenIds, tokensPerBlock: number, cacheSaltId?: bigint): KvBlockHash[] | undefined {
  return CHAINS.get(algo)?.(tokenIds, tokensPerBlock, cacheSaltId);
}

/** What a block is chained on: the v1 hash itself, or the full 32-byte v2 key. */
export type ChainState = bigint | Buffer;

/**
 * An algorithm's chain as steps that can resume: `extend` continues a chain of full-block
 * states in place (see extendBlockHashChain), `key` is what workers publish for a state
 * (absent: the state is the key).
 */
export interface ChainSteps {
  extend(states: ChainState[], tokenIds: TokenIds, tokensPerBlock: number, cacheSaltId?: bigint): void;
  key?(state: ChainState): KvBlockHash;
}

const STEPS = new Map<string, ChainSteps>([
  [V1_BLOCK_KEY_ALGO, { extend: (s, ids, tpb, salt) => void extendBlockHashChain(s as bigint[], ids, tpb, undefined, salt) }],
  [V2_SHA256_ALGO, { extend: (s, ids, tpb, salt) => void extendV2KeyChain(s as Buffer[], ids, tpb, salt), key: (k) => (k as Buffer).toString('hex') }],
  [V2_SHA256_64_ALGO, { extend: (s, ids, tpb, salt) => void extendV2KeyChain(s as Buffer[], ids, tpb, salt), key: (k) => (k as Buffer).readBigUInt64BE(0) }],
]);

/** The resumable steps of a known algorithm, the same computation as blockKeyChain. */
export function chainSteps(algo: string): ChainSteps | undefined {
  return STEPS.get(algo);
}
