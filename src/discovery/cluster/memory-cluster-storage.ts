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
 * The cluster storage this router serves to self-registering workers (`disagg_cluster` with an
 * http(s) uri): keys with a TTL that heartbeats (`expire`) push forward, and events for every
 * key set, deleted or expired. Time the process could not run (a blocked event loop, a
 * suspended VM) is not charged to the keys: the workers' heartbeats could not be read meanwhile.
 */
export class MemoryClusterStorage extends EventEmitter<ClusterStorageEvents> {
  private readonly items = new Map<string, StoredItem>();
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

  set(key: string, value: string, options: SetOptions = {}): boolean {
    this.settleStall();
    if (this.live(key) && !options.overwrite) return false;
    const ttlS = options.ttlS ?? -1;
    this.items.set(key, { value, expiresAt: ttlS > 0 ? this.now() + ttlS * 1000 : undefined });
    this.emit('set', key, value);
    return true;
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
    if (!this.items.delete(key)) return false;
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
      this.items.delete(key);
      this.emit('delete', key);
      return undefined;
    }
    return item;
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
