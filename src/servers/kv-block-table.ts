/**
 * The block hashes the router believes a worker holds, built only from that worker's KV cache
 * events. Keys are bigint for v1 (64-bit) hashes and string for hex (v2_sha256) hashes.
 */
export type BlockKey = bigint | string;

export class KvBlockTable {
  private readonly blocks = new Set<BlockKey>();
  /** Total blocks the worker reported at `created`, when known. */
  capacity?: number;
  eventsApplied = 0;
  lastEventId?: number;

  get size(): number {
    return this.blocks.size;
  }

  has(hash: BlockKey): boolean {
    return this.blocks.has(hash);
  }

  add(hash: BlockKey): void {
    this.blocks.add(hash);
  }

  delete(hash: BlockKey): void {
    this.blocks.delete(hash);
  }

  clear(): void {
    this.blocks.clear();
  }

  /** The hashes held, in no particular order (admin state, tests). */
  keys(): IterableIterator<BlockKey> {
    return this.blocks.keys();
  }

  /** Number of leading hashes of the chain present in the table (a prefix match). */
  matchPrefix(chain: readonly BlockKey[]): number {
    let n = 0;
    while (n < chain.length && this.blocks.has(chain[n])) n++;
    return n;
  }
}
