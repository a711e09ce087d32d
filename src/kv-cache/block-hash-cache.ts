import { LazyRecency } from '../common/lazy-recency';
import { OldestFirst } from '../common/oldest-first';
import { blockKeyChain, chainSteps, type ChainState } from './hash-algos';
import type { KvBlockHash } from './kv-events';
import type { TokenIds } from '../common/token-id-array';

/** Bounds of the cache: stored tokens (4 bytes each, plus about a key per block) and prompts. */
export interface BlockHashCacheLimits {
  maxTokens: number;
  maxEntries: number;
}

export const DEFAULT_BLOCK_HASH_CACHE_LIMITS: BlockHashCacheLimits = { maxTokens: 2 * 1024 * 1024, maxEntries: 4096 };
/** Prompts a lookup compares, at most: the newest of one prefix checkpoint. */
const PER_BUCKET = 8;
/** Checkpoints double up to this many blocks, then come every this many blocks. */
const CHECKPOINT_STRIDE = 16;

interface Entry {
  /** The buckets it is filed in: one per checkpoint (see prefixPrints). */
  readonly buckets: string[];
  /** The hashed tokens (the prompt without its last token) as the hashes read them: uint32. */
  readonly tokens: Uint32Array;
  readonly states: ChainState[];
  readonly keys: KvBlockHash[];
  /** When it was last put at the back of the LRU order (LazyRecency). */
  stamp: number;
}

/**
 * Block-key chains of recent prompts, so that a prompt sharing a prefix with one seen before
 * (the next turn of a conversation, the other pool's router on the same request) hashes only
 * the blocks after the shared ones. Exact: a block is reused only when all tokens up to its
 * end are equal, in the same algorithm, block size and cache salt; the result is the chain
 * blockKeyChain computes. Bounded in tokens and prompts, least recently used dropped first.
 * One per app (KvCacheModule), shared by every KV-aware router.
 *
 * A prompt is filed under prints of its first 1, 2, 4, 8, 16, 32, 48... blocks, and looked up from its
 * longest checkpoint down: the previous turn of one conversation is found under a prefix no
 * other conversation has, however many conversations share the system prompt. Each bucket
 * keeps its newest PER_BUCKET prompts, so a lookup compares a few prompts at most.
 */
export class BlockHashCache {
  private readonly buckets = new Map<string, Entry[]>();
  /** Least recently used first. */
  private readonly lru = new Set<Entry>();
  private readonly recency = new LazyRecency();
  private readonly oldest = new OldestFirst(() => this.lru.values());
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
  chains(tokenLists: readonly TokenIds[], tokensPerBlock: number, algo: string, cacheSaltId?: bigint): KvBlockHash[][] | undefined {
    const out: KvBlockHash[][] = [];
    for (const ids of tokenLists) {
      const chain = this.chain(algo, ids, tokensPerBlock, cacheSaltId);
      if (!chain) return undefined;
      out.push(chain);
    }
    return out;
  }

  /** As blockKeyChain, a fresh array the caller may keep. */
  chain(algo: string, tokenIds: TokenIds, tokensPerBlock: number, cacheSaltId?: bigint): KvBlockHash[] | undefined {
    const steps = chainSteps(algo);
    const end = tokenIds.length - 1;
    // Bad block sizes throw there; prompts without a full block cost little to hash.
    if (!steps || !Number.isInteger(tokensPerBlock) || tokensPerBlock <= 0 || end < tokensPerBlock || end > this.limits.maxTokens) {
      return blockKeyChain(algo, tokenIds, tokensPerBlock, cacheSaltId);
    }
    const scope = blockKeyScope(algo, tokensPerBlock, cacheSaltId);
    const buckets = prefixPrints(tokenIds, tokensPerBlock, end).map((print) => `${scope} ${print}`);
    let best: Entry | undefined;
    let shared = 0;
    for (let k = buckets.length - 1; k >= 0 && !best; k--) {
      for (const e of this.buckets.get(buckets[k]) ?? []) {
        const n = sharedPrefix(e.tokens, tokenIds, end);
        if (n > shared) {
          best = e;
          shared = n;
        }
      }
    }
    if (best && shared === end && best.tokens.length === end) {
      this.hits += 1;
      this.reusedBlocks += best.keys.length;
      this.touch(best);
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
    this.store({ buckets, tokens: uint32Copy(tokenIds, end), states, keys, stamp: this.recency.next() });
    return keys.slice();
  }

  clear(): void {
    this.buckets.clear();
    this.lru.clear();
    this.oldest.reset();
    this.storedTokens = 0;
  }

  private store(entry: Entry): void {
    for (const bucket of entry.buckets) {
      let list = this.buckets.get(bucket);
      if (!list) this.buckets.set(bucket, (list = []));
      list.push(entry);
      if (list.length > PER_BUCKET) list.shift();
    }
    this.lru.add(entry);
    this.storedTokens += entry.tokens.length;
    while (this.storedTokens > this.limits.maxTokens || this.lru.size > this.limits.maxEntries) {
      const oldest = this.oldest.take();
      if (!oldest) break;
      this.drop(oldest);
    }
  }

  /** Most recently used last (lazily: see LazyRecency), in the LRU order and in its buckets alike. */
  private touch(entry: Entry): void {
    if (!this.recency.due(entry.stamp, this.lru.size)) return;
    entry.stamp = this.recency.next();
    this.lru.delete(entry);
    this.lru.add(entry);
    for (const bucket of entry.buckets) {
      const list = this.buckets.get(bucket);
      const at = list ? list.indexOf(entry) : -1;
      if (at < 0) continue;
      list!.splice(at, 1);
      list!.push(entry);
    }
  }

  private drop(entry: Entry): void {
    if (!this.lru.delete(entry)) return;
    this.storedTokens -= entry.tokens.length;
    for (const bucket of entry.buckets) {
      const list = this.buckets.get(bucket);
      const at = list ? list.indexOf(entry) : -1;
      if (at < 0) continue;
      list!.splice(at, 1);
      if (list!.length === 0) this.buckets.delete(bucket);
    }
  }
}

/** What a chain of block keys depends on besides the tokens: the algorithm, the block size and the cache salt. */
export function blockKeyScope(algo: string, tokensPerBlock: number, cacheSaltId?: bigint): string {
  return `${algo} ${tokensPerBlock} ${cacheSaltId ?? '-'}`;
}

/** Tokens equal from the start, as the hashes read them (uint32), among the first `end`. */
function sharedPrefix(cached: Uint32Array, ids: TokenIds, end: number): number {
  const n = Math.min(cached.length, end);
  let i = 0;
  while (i < n && cached[i] === ids[i] >>> 0) i++;
  return i;
}

/**
 * FNV-1a prints of the first 1, 2, 4, 8, 16, 32, 48... blocks (those within the first `end`
 * tokens): prompts sharing no first block never meet, and the longest shared checkpoint finds
 * the closest prompt.
 */
function prefixPrints(ids: TokenIds, tokensPerBlock: number, end: number): number[] {
  const prints: number[] = [];
  let h = 0x811c9dc5;
  let next = tokensPerBlock;
  for (let i = 0; i < end; i++) {
    h = Math.imul(h ^ (ids[i] >>> 0), 0x01000193);
    if (i + 1 === next) {
      prints.push(h >>> 0);
      next = next < CHECKPOINT_STRIDE * tokensPerBlock ? next * 2 : next + CHECKPOINT_STRIDE * tokensPerBlock;
    }
  }
  return prints;
}

/** The first `end` ids as uint32 (TypedArray.set converts as an element store would, twice as fast as a loop here). */
function uint32Copy(ids: TokenIds, end: number): Uint32Array {
  const out = new Uint32Array(ids.length);
  out.set(ids);
  return end === ids.length ? out : out.subarray(0, end);
}
