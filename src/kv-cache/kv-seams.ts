import type { KvCacheEvent } from './kv-events';

/**
 * Seams for several router replicas sharing what the workers' KV events say: which worker a
 * replica polls, and where the events it drained go besides its own block tables. Without a
 * provider (a single router) the poller polls every worker and publishes nothing.
 */

/** Whether this router polls a worker's /kv_cache_events (a destructive read: one poller per worker). */
export const KV_POLL_OWNERSHIP = Symbol('KV_POLL_OWNERSHIP');
export interface KvPollOwnership {
  owns(serverUrl: string): boolean;
}

/**
 * Receives the events this router drained from a worker, after it applied them, e.g. to
 * pass them on to other replicas, which apply them with KvEventApplier.apply. They are the
 * KV event parsers' objects (64-bit hashes as bigint): `serializeKvEvents` writes them as
 * JSON and `parseKvEventsFast` reads them back without losing bits. A worker that restarted
 * numbers its events from the start again; the poller sees it (its drains never repeat an
 * event), calls KvEventApplier.restart and says so with `restarted`: a receiving replica
 * must call restart too before applying these events.
 */
export const KV_EVENT_PUBLISHER = Symbol('KV_EVENT_PUBLISHER');
export interface KvEventPublisher {
  publish(serverUrl: string, events: readonly KvCacheEvent[], restarted: boolean): void;
}

/** Where the KV room reports its counters; bound to the metrics service when metrics exist. */
export const KV_METRICS = Symbol('KV_METRICS');
export interface KvMetrics {
  kvEventsApplied(serverUrl: string, count: number): void;
  /** A /kv_cache_events drain sent (optional: seams written before it count nothing). */
  kvPoll?(serverUrl: string): void;
  kvPollError(serverUrl: string): void;
}

export const POLL_EVERY_WORKER: KvPollOwnership = { owns: () => true };
export const PUBLISH_NOWHERE: KvEventPublisher = { publish: () => undefined };
