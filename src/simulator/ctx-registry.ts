/**
 * Context results published by context workers so that generation workers of the same
 * cluster can tell whether they could have received the KV of a `ctx_request_id`.
 */
export interface CtxEntry {
  promptLength: number;
  firstGenTokens: number[];
  contextUrl: string;
}

export class CtxRegistry {
  private readonly entries = new Map<number, CtxEntry>();

  /** Oldest entries are forgotten past `maxEntries` so long benchmarks stay bounded. */
  constructor(private readonly maxEntries = 100_000) {}

  publish(ctxRequestId: number, entry: CtxEntry): void {
    this.entries.set(ctxRequestId, entry);
    if (this.entries.size > this.maxEntries) {
      this.entries.delete(this.entries.keys().next().value as number);
    }
  }

  get(ctxRequestId: number): CtxEntry | undefined {
    return this.entries.get(ctxRequestId);
  }

  has(ctxRequestId: number): boolean {
    return this.entries.has(ctxRequestId);
  }

  /** The KV of a context is transferred once: a completed generation consumes it. */
  consume(ctxRequestId: number): boolean {
    return this.entries.delete(ctxRequestId);
  }

  get size(): number {
    return this.entries.size;
  }
}

// Request ids are unique within a process; the pid-derived base keeps separately started
// simulator processes from handing out the same ids.
let nextCtxRequestId = (process.pid % 0x10000) * 1_000_000_000 + 1;

export function allocateCtxRequestId(): number {
  return nextCtxRequestId++;
}
