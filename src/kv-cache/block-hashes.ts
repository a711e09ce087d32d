import { blockKeyChain, KV_HASH_ALGOS } from './hash-algos';
import type { BlockKey } from './kv-block-table';

/** Hash algorithms whose block keys the router can compute from token ids. */
export const SUPPORTED_HASH_ALGOS: readonly string[] = KV_HASH_ALGOS;

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
  const out: BlockKey[][] = [];
  for (const ids of tokenLists) {
    const chain = blockKeyChain(algo, ids, tokensPerBlock, cacheSaltId);
    if (!chain) return undefined;
    out.push(chain);
  }
  return out;
}

/** Tokens of the hashed blocks, as TensorRT-LLM pads them (at least 1, never a division by 0). */
export function paddedTokens(hashes: readonly BlockKey[][], tokensPerBlock: number): number {
  let blocks = 0;
  for (const list of hashes) blocks += list.length;
  return Math.max(blocks * tokensPerBlock, 1);
}
