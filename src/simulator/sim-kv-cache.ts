import { V1_BLOCK_KEY_ALGO } from '../kv-cache/block-hash';
import { cacheSaltId } from '../kv-cache/cache-salt';
import { blockKeyChain, isKvHashAlgo, KV_HASH_ALGOS } from '../kv-cache/hash-algos';
import { KvBlockHash, KvCacheEvent, KvEventData, KvStoredBlock } from '../kv-cache/kv-events';

export interface SimKvCacheOptions {
  /** Capacity in blocks. */
  capacityBlocks: number;
  tokensPerBlock: number;
  /** `window_size` written on every event. */
  windowSize: number;
  /** Events kept for the next drain; older ones are dropped when nobody polls. */
  maxBufferedEvents: number;
  /** Priority written on stored blocks (TensorRT-LLM's default retention priority). */
  priority?: number;
  /** Block-key algorithm, default v1_block_key; others are written as `hash_algo` on every event. */
  hashAlgo?: string;
}

export interface AdmitResult {
  chain: KvBlockHash[];
  matchedBlocks: number;
  cachedTokens: number;
  storedBlocks: number;
}

/**
 * The worker's KV cache: a set of block hashes in LRU order with TensorRT-LLM's event log
 * (`created`, `stored`, `removed`). Blocks are keyed by the worker's hash algorithm, salted per
 * request by its `cache_salt`, exactly as the router computes them.
 */
export class SimKvCache {
  readonly capacity: number;
  readonly tokensPerBlock: number;
  readonly windowSize: number;
  readonly hashAlgo: string;
  /** hash -> tokens in the block; Map order is the LRU order (oldest first). */
  private readonly blocks = new Map<KvBlockHash, number>();
  private events: KvCacheEvent[] = [];
  private nextEventId = 1;
  private readonly maxBufferedEvents: number;
  private readonly priority: number;
  droppedEvents = 0;

  constructor(opts: SimKvCacheOptions) {
    if (!Number.isInteger(opts.capacityBlocks) || opts.capacityBlocks < 0) {
      throw new RangeError(`kvBlocks must be a non-negative integer, got ${opts.capacityBlocks}`);
    }
    if (!Number.isInteger(opts.tokensPerBlock) || opts.tokensPerBlock <= 0) {
      throw new RangeError(`tokensPerBlock must be a positive integer, got ${opts.tokensPerBlock}`);
    }
    this.capacity = opts.capacityBlocks;
    this.tokensPerBlock = opts.tokensPerBlock;
    this.windowSize = opts.windowSize;
    this.maxBufferedEvents = opts.maxBufferedEvents;
    this.priority = opts.priority ?? 35;
    this.hashAlgo = opts.hashAlgo ?? V1_BLOCK_KEY_ALGO;
    if (!isKvHashAlgo(this.hashAlgo)) throw new RangeError(`hashAlgo must be one of ${KV_HASH_ALGOS.join(', ')}, got "${this.hashAlgo}"`);
    this.emit({ type: 'created', num_blocks_per_cache_level: [this.capacity, 0] });
  }

  get size(): number {
    return this.blocks.size;
  }

  has(hash: KvBlockHash): boolean {
    return this.blocks.has(hash);
  }

  /** Block hashes held, oldest (next to evict) first. */
  hashes(): KvBlockHash[] {
    return [...this.blocks.keys()];
  }

  /** The block keys of a prompt, in the namespace of its cache salt when it has one. */
  chainFor(tokenIds: readonly number[], cacheSalt?: string): KvBlockHash[] {
    return blockKeyChain(this.hashAlgo, tokenIds, this.tokensPerBlock, cacheSalt === undefined ? undefined : cacheSaltId(cacheSalt))!;
  }

  /** Number of leading blocks of `chain` already cached. */
  matchPrefix(chain: readonly KvBlockHash[]): number {
    let n = 0;
    while (n < chain.length && this.blocks.has(chain[n])) n++;
    return n;
  }

  /**
   * A prompt enters the cache: its cached prefix is reused (and refreshed in LRU order), the
   * rest of its blocks are stored, evicting least recently used blocks when full.
   */
  admit(tokenIds: readonly number[], chain: KvBlockHash[] = this.chainFor(tokenIds)): AdmitResult {
    const tpb = this.tokensPerBlock;
    const keyLength = Math.max(0, tokenIds.length - 1);
    const matched = this.matchPrefix(chain);
    for (let i = 0; i < matched; i++) {
      const h = chain[i];
      const n = this.blocks.get(h)!;
      this.blocks.delete(h);
      this.blocks.set(h, n);
    }
    const cachedTokens = Math.min(matched * tpb, keyLength);
    let toStore = chain.length - matched;
    if (toStore > 0 && this.capacity > 0) {
      const room = this.capacity - this.blocks.size;
      if (toStore > room) this.evict(Math.min(toStore - room, this.blocks.size - matched), chain, matched);
      toStore = Math.min(toStore, this.capacity - this.blocks.size);
    } else {
      toStore = 0;
    }
    if (toStore > 0) {
      const stored: KvStoredBlock[] = [];
      for (let i = matched; i < matched + toStore; i++) {
        const start = i * tpb;
        const end = Math.min(start + tpb, keyLength);
        const tokens = new Array(end - start);
        for (let t = start; t < end; t++) {
          tokens[t - start] = { type: 'unique_token', token_id: tokenIds[t], token_extra_id: 0 };
        }
        this.blocks.set(chain[i], end - start);
        stored.push({ type: 'stored_block', block_hash: chain[i], tokens, lora_id: null, cache_level: 0, priority: this.priority });
      }
      this.emit({ type: 'stored', parent_hash: matched > 0 ? chain[matched - 1] : null, blocks: stored });
    }
    return { chain, matchedBlocks: matched, cachedTokens, storedBlocks: toStore };
  }

  /** Drops every block (one `removed` event). */
  clear(): void {
    if (this.blocks.size === 0) return;
    const hashes = [...this.blocks.keys()];
    this.blocks.clear();
    this.emit({ type: 'removed', block_hashes: hashes });
  }

  /** The events since the last drain (a destructive read, like the worker endpoint). */
  drainEvents(): KvCacheEvent[] {
    const out = this.events;
    this.events = [];
    return out;
  }

  get pendingEvents(): number {
    return this.events.length;
  }

  private evict(count: number, chain: readonly KvBlockHash[], protectedCount: number): void {
    if (count <= 0) return;
    const protect = protectedCount > 0 ? new Set(chain.slice(0, protectedCount)) : undefined;
    const removed: KvBlockHash[] = [];
    for (const h of this.blocks.keys()) {
      if (removed.length >= count) break;
      if (protect?.has(h)) continue;
      removed.push(h);
    }
    for (const h of removed) this.blocks.delete(h);
    if (removed.length > 0) this.emit({ type: 'removed', block_hashes: removed });
  }

  private emit(data: KvEventData): void {
    const event: KvCacheEvent = { event_id: this.nextEventId++, data, window_size: this.windowSize };
    // v1 workers predate the tag and do not write it.
    if (this.hashAlgo !== V1_BLOCK_KEY_ALGO) event.hash_algo = this.hashAlgo;
    this.events.push(event);
    if (this.events.length > this.maxBufferedEvents) {
      const drop = this.events.length - this.maxBufferedEvents;
      this.events.splice(0, drop);
      this.droppedEvents += drop;
    }
  }
}
