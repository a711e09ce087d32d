/*
 * The KV code's extension points this module plugs into: who polls a worker's
 * /kv_cache_events, where drained events go, and how events from the bus are applied.
 */

export const KV_POLL_OWNERSHIP = Symbol('KV_POLL_OWNERSHIP');
/** Whether this router polls the worker's /kv_cache_events (a destructive read). */
export interface KvPollOwnership {
  owns(serverUrl: string): boolean;
}

export const KV_EVENT_PUBLISHER = Symbol('KV_EVENT_PUBLISHER');
/** Receives the raw events a poll drained, before they are applied. */
export interface KvEventPublisher {
  publish(serverUrl: string, events: readonly unknown[]): void;
}
