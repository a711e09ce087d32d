import { blockHashChain, V1_BLOCK_KEY_ALGO } from '../../kv-cache/block-hash';
import type { BlockKey } from '../../servers';

/** Hash algorithms whose block keys the router can compute from token ids. */
export const SUPPORTED_HASH_ALGOS: readonly string[] = [V1_BLOCK_KEY_ALGO];

/**
 * Block-hash chains of each token list (the last token of a prompt is never in a block key),
 * or undefined when the algorithm is not one the router computes.
 */
export function blockHashesFor(tokenLists: readonly number[][], tokensPerBlock: number, algo: string): BlockKey[][] | undefined {
  if (algo !== V1_BLOCK_KEY_ALGO) return undefined;
  return tokenLists.map((ids) => blockHashChain(ids, tokensPerBlock));
}

/** Tokens of the hashed blocks, as TensorRT-LLM pads them (at least 1, never a division by 0). */
export function paddedTokens(hashes: readonly BlockKey[][], tokensPerBlock: number): number {
  let blocks = 0;
  for (const list of hashes) blocks += list.length;
  return Math.max(blocks * tokensPerBlock, 1);
}
