import { EventEmitter } from 'node:events';

/** One key of the storage, as TensorRT-LLM's StorageItem. */
interface StoredItem {
  value: string;
  /** Monotonic ms after which the key is gone; undefined: never. */
  expiresAt?: number;
}

export interface ClusterStorageEvents {
  set: [key: string, value: string];
  delete: [key: string];
}

export interface SetOptions {
  overwrite?: boolean;
  /** Seconds; <= 0 keeps the key until deleted. */
  ttlS?: number;
}

const SWEEP_MS = 1_000;

/**
 * Bounds of what anyone who may call /set can make the router hold. A worker record is about
 * 100 bytes under a key of about 100: these leave room for thousands of workers, not for
 * memory exhaustion (see README "Self-registering workers").
 */
export const STORAGE_LIMITS = {
  keyBytes: 1_024,
  valueBytes: 16 * 1_024,
  keys: 4_096,
  totalBytes: 8 * 1_024 * 1_024,
} as const;

/** `exists`: the key is there and overwrite was not asked; `full`: a bound would be passed. */
export type SetOutcome = 'set' | 'exists' | 'full';

/**
 * The cluster storage this router serves to self-registering workers (`disagg_cluster` with an
 * http(s) uri): keys with a TTL that heartbeats (`expire`) push forward, and events for every
 * key set, deleted or expired. Time the process could not run (a blocked event loop, a
 * suspended VM) is not charged to the keys: the workers' heartbeats could not be read meanwhile.
 */
export class MemoryClusterStorage extends EventEmitter<ClusterStorageEvents> {
  private readonly items = new Map<string, StoredItem>();
  /** Key and value bytes held, kept against STORAGE_LIMITS.totalBytes. */
  private bytes = 0;
  private timer?: NodeJS.Timeout;
  private lastLook = 0;

  constructor(private readonly now: () => number = () => performance.now()) {
    super();
    this.lastLook = now();
  }

  start(): void {
    if (this.timer) return;
    this.lastLook = this.now();
    this.timer = setInterval(() => this.sweep(), SWEEP_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Key and value must be within STORAGE_LIMITS' per-item sizes (the caller answers 413 otherwise). */
  set(key: string, value: string, options: SetOptions = {}): SetOutcome {
    this.settleStall();
    const previous = this.live(key);
    if (previous && !options.overwrite) return 'exists';
    const added = itemBytes(key, value) - (previous ? itemBytes(key, previous.value) : 0);
    if ((!previous && this.items.size >= STORAGE_LIMITS.keys) || this.bytes + added > STORAGE_LIMITS.totalBytes) return 'full';
    const ttlS = options.ttlS ?? -1;
    this.items.set(key, { value, expiresAt: ttlS > 0 ? this.now() + ttlS * 1000 : undefined });
    this.bytes += added;
    this.emit('set', key, value);
    return 'set';
  }

  get(key: string): string | undefined {
    const item = this.live(key);
    return item?.value;
  }

  /** Sets a key's TTL from now (a heartbeat); false for a missing or expired key. */
  expire(key: string, ttlS: number): boolean {
    const item = this.live(key);
    if (!item) return false;
    item.expiresAt = this.now() + ttlS * 1000;
    return true;
  }

  delete(key: string): boolean {
    if (!this.remove(key)) return false;
    this.emit('delete', key);
    return true;
  }

  getPrefix(prefix: string, keysOnly = false): Record<string, string> {
    const out: Record<string, string> = {};
    for (const key of [...this.items.keys()]) {
      if (!key.startsWith(prefix)) continue;
      const item = this.live(key);
      if (item) out[key] = keysOnly ? '' : item.value;
    }
    return out;
  }

  get size(): number {
    return this.items.size;
  }

  /** The item, or undefined after removing it if its time is up. */
  private live(key: string): StoredItem | undefined {
    const item = this.items.get(key);
    if (!item) return undefined;
    this.settleStall();
    if (item.expiresAt !== undefined && item.expiresAt <= this.now()) {
      this.remove(key);
      this.emit('delete', key);
      return undefined;
    }
    return item;
  }

  private remove(key: string): boolean {
    const item = this.items.get(key);
    if (!item) return false;
    this.items.delete(key);
    this.bytes -= itemBytes(key, item.value);
    return true;
  }

  private sweep(): void {
    this.settleStall();
    for (const key of [...this.items.keys()]) this.live(key);
  }

  /**
   * Time beyond the sweep interval since the last look means the process was stalled: every
   * deadline moves by the stall, so live workers whose heartbeats sat unread are not expired.
   * Runs before any TTL decision, so a heartbeat queued behind the stall settles it first.
   */
  private settleStall(): void {
    const now = this.now();
    const stalled = now - this.lastLook - SWEEP_MS;
    this.lastLook = now;
    if (stalled <= SWEEP_MS / 2) return;
    for (const item of this.items.values()) if (item.expiresAt !== undefined) item.expiresAt += stalled;
  }
}

function itemBytes(key: string, value: string): number {
  return Buffer.byteLength(key) + Buffer.byteLength(value);
}
