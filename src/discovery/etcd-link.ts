import type { Logger } from '@nestjs/common';

/** What the discovery state shows of the connection to etcd. */
export interface EtcdLinkState {
  connected: boolean;
  last_sync_at: string | null;
  disconnected_since: string | null;
  last_error: string | null;
}

/**
 * Whether the router reaches etcd, since when it does not and why, logged once per change (an
 * outage is one warning, however many calls fail during it). `onChange` feeds the metric.
 */
export class EtcdLink {
  private up = false;
  private downSince?: number;
  private lastSyncAt?: number;
  private lastError?: string;

  constructor(
    private readonly endpoint: string,
    private readonly logger: Logger,
    private readonly onChange: (connected: boolean) => void,
    /** How many servers the router keeps meanwhile (named in the outage warning). */
    private readonly knownServers: () => number,
  ) {}

  get connected(): boolean {
    return this.up;
  }

  /** A full read succeeded. */
  synced(): void {
    this.lastSyncAt = Date.now();
    if (this.up) return;
    if (this.downSince !== undefined) this.logger.log(`etcd at ${this.endpoint} reachable again after ${((Date.now() - this.downSince) / 1000).toFixed(1)} s`);
    this.up = true;
    this.downSince = undefined;
    this.lastError = undefined;
    this.onChange(true);
  }

  failed(err: unknown): void {
    this.lastError = (err as Error)?.message ?? String(err);
    if (this.downSince !== undefined && !this.up) return;
    const wasUp = this.up;
    this.up = false;
    this.downSince = Date.now();
    this.onChange(false);
    this.logger.warn(
      wasUp
        ? `etcd at ${this.endpoint} unreachable (${this.lastError}): keeping the ${this.knownServers()} known servers until it returns`
        : `etcd at ${this.endpoint} not reachable yet (${this.lastError}); retrying`,
    );
  }

  state(): EtcdLinkState {
    const iso = (t?: number): string | null => (t === undefined ? null : new Date(t).toISOString());
    return { connected: this.up, last_sync_at: iso(this.lastSyncAt), disconnected_since: iso(this.downSince), last_error: this.lastError ?? null };
  }
}
