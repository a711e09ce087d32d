/** Per-worker timing: prefill cost per uncached prompt token, one decode step per output token. */
export interface LatencyOptions {
  /** Milliseconds per prompt token not found in the KV cache. */
  prefillMsPerToken: number;
  /** Milliseconds per decode step (one output token); streaming chunks are paced by it. */
  decodeMsPerToken: number;
  /** Requests served at once (the engine's max batch size); 0 = unlimited. Others queue FIFO. */
  maxBatchSize: number;
  /** Fixed extra milliseconds added before every generation answer. */
  overheadMs: number;
}

export const LATENCY_PRESETS = {
  /** No waiting at all: answers are written synchronously, for benchmarks. */
  zero: { prefillMsPerToken: 0, decodeMsPerToken: 0, maxBatchSize: 0, overheadMs: 0 },
  /** Plausible numbers for a demo of one GPU worker. */
  demo: { prefillMsPerToken: 0.05, decodeMsPerToken: 10, maxBatchSize: 64, overheadMs: 0 },
} as const satisfies Record<string, LatencyOptions>;

export type LatencyPreset = keyof typeof LATENCY_PRESETS;

export function resolveLatency(input: LatencyPreset | Partial<LatencyOptions> | undefined): LatencyOptions {
  if (input === undefined) return { ...LATENCY_PRESETS.zero };
  if (typeof input === 'string') {
    const preset = LATENCY_PRESETS[input];
    if (!preset) throw new RangeError(`unknown latency preset "${String(input)}" (zero, demo)`);
    return { ...preset };
  }
  const out: LatencyOptions = { ...LATENCY_PRESETS.zero, ...input };
  for (const [key, value] of Object.entries(out)) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`latency.${key} must be a non-negative number, got ${String(value)}`);
    }
  }
  return out;
}

/** A cancellable waiter in the batch queue. */
export interface SlotWaiter {
  readonly closed: boolean;
}

/**
 * The max-batch-size limiter. tryAcquire() succeeds synchronously when a slot is free so the
 * zero-latency path never allocates a promise.
 */
export class BatchSlots {
  private active = 0;
  private readonly queue: Array<{ waiter: SlotWaiter; resolve: () => void }> = [];

  constructor(private max: number) {}

  setMax(max: number): void {
    this.max = max;
    this.pump();
  }

  get inUse(): number {
    return this.active;
  }

  get queued(): number {
    return this.queue.length;
  }

  tryAcquire(): boolean {
    if (this.max > 0 && this.active >= this.max) return false;
    this.active++;
    return true;
  }

  acquire(waiter: SlotWaiter): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise((resolve) => this.queue.push({ waiter, resolve }));
  }

  release(): void {
    this.active--;
    this.pump();
  }

  /** Drops waiters whose clients went away. */
  prune(): void {
    for (let i = this.queue.length - 1; i >= 0; i--) if (this.queue[i].waiter.closed) this.queue.splice(i, 1);
  }

  private pump(): void {
    while (this.queue.length > 0 && (this.max === 0 || this.active < this.max)) {
      const next = this.queue.shift()!;
      if (next.waiter.closed) continue;
      this.active++;
      next.resolve();
    }
  }
}
