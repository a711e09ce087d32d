export type SlotRejection = 'queue_full' | 'queue_timeout' | 'aborted' | 'closed';

/** Why a wait for a slot ended without one. */
export class SlotRejectedError extends Error {
  constructor(readonly reason: SlotRejection) {
    super(`no slot: ${reason}`);
    this.name = 'SlotRejectedError';
  }
}

interface Waiter {
  resolve(): void;
  reject(err: SlotRejectedError): void;
}

/**
 * A counting semaphore with a bounded FIFO wait queue and a per-waiter deadline. Acquiring a
 * free slot is synchronous; only a request that has to wait allocates a timer and a promise.
 */
export class SlotQueue {
  private used = 0;
  private readonly waiters: Waiter[] = [];
  private closed = false;

  constructor(
    readonly limit: number,
    readonly queueSize: number,
    readonly queueTimeoutMs: number,
  ) {}

  get inUse(): number {
    return this.used;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** Takes a slot if one is free. */
  tryAcquire(): boolean {
    if (this.closed || this.used >= this.limit) return false;
    this.used++;
    return true;
  }

  /** Waits in the queue for a slot; rejects when the queue is full, on timeout or on abort. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    if (this.closed) return Promise.reject(new SlotRejectedError('closed'));
    if (signal?.aborted) return Promise.reject(new SlotRejectedError('aborted'));
    if (this.waiters.length >= this.queueSize) return Promise.reject(new SlotRejectedError('queue_full'));
    return new Promise<void>((resolve, reject) => {
      const settle = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      const waiter: Waiter = {
        // release() hands its slot over directly: `used` stays counted for the new owner.
        resolve: () => {
          settle();
          resolve();
        },
        reject: (err) => {
          settle();
          reject(err);
        },
      };
      const onAbort = (): void => waiter.reject(new SlotRejectedError('aborted'));
      const timer = setTimeout(() => waiter.reject(new SlotRejectedError('queue_timeout')), this.queueTimeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  release(): void {
    const next = this.waiters[0];
    if (next) next.resolve();
    else if (this.used > 0) this.used--;
  }

  /** Rejects every waiter and refuses new ones (shutdown); held slots are still released normally. */
  close(): void {
    this.closed = true;
    for (const w of [...this.waiters]) w.reject(new SlotRejectedError('closed'));
  }
}
