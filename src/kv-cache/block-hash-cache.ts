import { blockKeyChain, chainSteps, type ChainState } from './hash-algos';
import type { KvBlockHash } from './kv-events';

/** Bounds of the cache: stored tokens (4 bytes each, plus about a key per block) and prompts. */
export interface BlockHashCacheLimits {
  maxTokens: number;
  maxEntries: number;
}

export const DEFAULT_BLOCK_HASH_CACHE_LIMITS: BlockHashCacheLimits = { maxTokens: 2 * 1024 * 1024, maxEntries: 4096 };
/** Prompts kept per first block (one per conversation sharing a system prompt, say). */
const PER_FIRST_BLOCK = 8;

interface Entry {
  readonly bucket: string;
  /** The hashed tokens (the prompt without its last token) as the hashes read them: uint32. */
  readonly tokens: Uint32Array;
  readonly states: ChainState[];
  readonly keys: KvBlockHash[];
}

/**
 * Block-key chains of recent prompts, so that a prompt sharing a prefix with one seen before
 * (the next turn of a conversation, the other pool's router on the same request) hashes only
 * the blocks after the shared ones. Exact: a block is reused only when all tokens up to its
 * end are equal, in the same algorithm, block size and cache salt; the result is the chain
 * blockKeyChain computes. Bounded in tokens and prompts, least recently used dropped first.
 * One per app (KvCacheModule), shared by every KV-aware router.
 */
export class BlockHashCache {
  private readonly buckets = new Map<string, Entry[]>();
  /** Least recently used first. */
  private readonly lru = new Set<Entry>();
  private storedTokens = 0;
  /** Prompts whose whole chain was cached, and the others. */
  hits = 0;
  misses = 0;
  /** Blocks taken from the cache, and blocks hashed (over all calls). */
  reusedBlocks = 0;
  hashedBlocks = 0;

  constructor(private readonly limits: BlockHashCacheLimits = DEFAULT_BLOCK_HASH_CACHE_LIMITS) {}

  get size(): number {
    return this.lru.size;
  }

  /** Tokens held, over all prompts. */
  get tokens(): number {
    return this.storedTokens;
  }

  /** As blockHashesFor: each list's chain, or undefined for an algorithm the router cannot compute. */
  chains(tokenLists: readonly number[][], tokensPerBlock: number, algo: string, cacheSaltId?: bigint): KvBlockHash[][] | undefined {
    const out: KvBlockHash[][] = [];
    for (const ids of tokenLists) {
      const chain = this.chain(algo, ids, tokensPerBlock, cacheSaltId);
      if (!chain) return undefined;
      out.push(chain);
    }
    return out;
  }

  /** As blockKeyChain, a fresh array the caller may keep. */
  chain(algo: string, tokenIds: readonly number[], tokensPerBlock: number, cacheSaltId?: bigint): KvBlockHash[] | undefined {
    const steps = chainSteps(algo);
    const end = tokenIds.length - 1;
    // Bad block sizes throw there; prompts without a full block cost little to hash.
    if (!steps || !Number.isInteger(tokensPerBlock) || tokensPerBlock <= 0 || end < tokensPerBlock || end > this.limits.maxTokens) {
      return blockKeyChain(algo, tokenIds, tokensPerBlock, cacheSaltId);
    }
    const bucket = `${algo} ${tokensPerBlock} ${cacheSaltId ?? '-'} ${firstBlockPrint(tokenIds, tokensPerBlock)}`;
    const entries = this.buckets.get(bucket);
    let best: Entry | undefined;
    let shared = 0;
    for (const e of entries ?? []) {
      const n = sharedPrefix(e.tokens, tokenIds, end);
      if (n > shared) {
        best = e;
        shared = n;
      }
    }
    if (best && shared === end && best.tokens.length === end) {
      this.hits += 1;
      this.reusedBlocks += best.keys.length;
      this.touch(best, entries!);
      return best.keys.slice();
    }
    this.misses += 1;
    // Blocks wholly inside the shared prefix are full blocks of both prompts.
    const reused = best ? Math.floor(shared / tokensPerBlock) : 0;
    const states = best ? best.states.slice(0, reused) : [];
    steps.extend(states, tokenIds, tokensPerBlock, cacheSaltId);
    this.reusedBlocks += reused;
    this.hashedBlocks += states.length - reused;
    let keys = states as KvBlockHash[];
    if (steps.key) {
      keys = best ? best.keys.slice(0, reused) : [];
      for (let i = reused; i < states.length; i++) keys.push(steps.key(states[i]));
    }
    // The prompt an earlier one grew into stands for it from now on.
    if (best && shared === best.tokens.length) this.drop(best);
    this.store({ bucket, tokens: uint32Copy(tokenIds, end), states, keys });
    return keys.slice();
  }

  clear(): void {
    this.buckets.clear();
    this.lru.clear();
    this.storedTokens = 0;
  }

  private store(entry: Entry): void {
    let list = this.buckets.get(entry.bucket);
    if (!list) this.buckets.set(entry.bucket, (list = []));
    list.push(entry);
    this.lru.add(entry);
    this.storedTokens += entry.tokens.length;
    if (list.length > PER_FIRST_BLOCK) this.drop(list[0]);
    for (const oldest of this.lru) {
      if (this.storedTokens <= this.limits.maxTokens && this.lru.size <= this.limits.maxEntries) break;
      this.drop(oldest);
    }
  }

  /** Most recently used last, in the LRU order and in its first block's list alike. */
  private touch(entry: Entry, list: Entry[]): void {
    this.lru.delete(entry);
    this.lru.add(entry);
    list.splice(list.indexOf(entry), 1);
    list.push(entry);
  }

  private drop(entry: Entry): void {
    if (!this.lru.delete(entry)) return;
    this.storedTokens -= entry.tokens.length;
    const list = this.buckets.get(entry.bucket)!;
    list.splice(list.indexOf(entry), 1);
    if (list.length === 0) this.buckets.delete(entry.bucket);
  }
}

/** Tokens equal from the start, as the hashes read them (uint32), among the first `end`. */
function sharedPrefix(cached: Uint32Array, ids: readonly number[], end: number): number {
  const n = Math.min(cached.length, end);
  let i = 0;
  while (i < n && cached[i] === ids[i] >>> 0) i++;
  return i;
}

/** FNV-1a over the first block's tokens: prompts sharing no first block never meet. */
function firstBlockPrint(ids: readonly number[], tokensPerBlock: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < tokensPerBlock; i++) h = Math.imul(h ^ (ids[i] >>> 0), 0x01000193);
  return h >>> 0;
}

function uint32Copy(ids: readonly number[], end: number): Uint32Array {
  const out = new Uint32Array(end);
  for (let i = 0; i < end; i++) out[i] = ids[i];
  return out;
}
