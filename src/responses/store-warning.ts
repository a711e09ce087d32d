import type { Logger } from '@nestjs/common';

/** At most one warning line per this interval, however many requests ask. */
const INTERVAL_MS = 10 * 60 * 1000;

/**
 * An explicit `store: true` is served (with `store: false` to the workers) but cannot be
 * honoured: it is warned about, as TensorRT-LLM does, on the first request and then once per
 * interval with the count since, never a line per request.
 */
export class StoreWarning {
  private lastAt: number | undefined;
  private since = 0;

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  note(requestId: string): void {
    this.since++;
    const now = this.now();
    if (this.lastAt !== undefined && now - this.lastAt < INTERVAL_MS) return;
    const more = this.since > 1 ? ` (${this.since} requests asked for it since the last warning)` : '';
    this.logger.warn(`[${requestId}] 'store' is ignored: the router keeps no response store and sends store: false to the workers${more}`);
    this.lastAt = now;
    this.since = 0;
  }
}
