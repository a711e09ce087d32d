import { blockHashChain, V1_BLOCK_KEY_ALGO } from '../../kv-cache/block-hash';
import { V2_SHA256_64_ALGO, V2_SHA256_ALGO, v2Sha256Chain, v2Sha256x64Chain } from '../../kv-cache/block-hash-v2';
import type { BlockKey } from '../../servers';

type ChainFn = (tokenIds: readonly number[], tokensPerBlock: number, cacheSaltId?: bigint) => BlockKey[];

const CHAINS = new Map<string, ChainFn>([
  [V1_BLOCK_KEY_ALGO, (ids, tpb, salt) => blockHashChain(ids, tpb, undefined, salt)],
  [V2_SHA256_ALGO, v2Sha256Chain],
  [V2_SHA256_64_ALGO, v2Sha256x64Chain],
]);

/** Hash algorithms whose block keys the router can compute from token ids. */
export const SUPPORTED_HASH_ALGOS: readonly string[] = [...CHAINS.keys()];

/**
 * Block-hash chains of each token list (the last token of a prompt is never in a block key),
 * salted with the request's cache salt id when it has one, or undefined when the algorithm is
 * not one the router computes.
 */
export function blockHashesFor(
  tokenLists: readonly number[][],
  tokensPerBlock: number,
  algo: string,
  cacheSaltId?: bigint,
): BlockKey[][] | undefined {
  const chain = CHAINS.get(algo);
  if (!chain) return undefined;
  return tokenLists.map((ids) => chain(ids, tokensPerBlock, cacheSaltId));
}

/** Tokens of the hashed blocks, as TensorRT-LLM pads them (at least 1, never a division by 0). */
export function paddedTokens(hashes: readonly BlockKey[][], tokensPerBlock: number): number {
  let blocks = 0;
  for (const list of hashes) blocks += list.length;
  return Math.max(blocks * tokensPerBlock, 1);
}
