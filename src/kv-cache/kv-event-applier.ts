import { Inject, Injectable, Optional } from '@nestjs/common';
import { isContinuation } from './kv-event-slices';
import type { KvCacheEvent } from './kv-events';
import { KV_METRICS, type KvMetrics } from './kv-seams';
import type { KvWorker } from './kv-worker';
import { KvWorkers } from './kv-workers';

export interface AppliedEvents {
  stored: number;
  removed: number;
  ignored: number;
}

/**
 * Applies a worker's KV cache events to its block tables, one table per hash algorithm (the
 * event's `hash_algo`, at its top level or in its data, else the worker's). `stored` adds blocks, `removed` drops them, `created` records
 * the capacity and starts an empty table (a new cache holds nothing, e.g. after a restart);
 * `updated` (cache level or priority) does not change what is cached.
 */
export function applyKvEvents(server: KvWorker, events: readonly KvCacheEvent[]): AppliedEvents {
  const applied: AppliedEvents = { stored: 0, removed: 0, ignored: 0 };
  for (const event of events) {
    // A tagged event also tells which algorithm the worker hashes with from now on.
    const tagged = event.hash_algo ?? event.data.hash_algo;
    if (tagged) server.announcedKvHashAlgo = tagged;
    const table = server.kvTable(tagged ?? server.kvHashAlgo);
    const data = event.data;
    switch (data.type) {
      case 'created':
        table.clear();
        // The router's own reset (see KvEventPoller, a lost drain) names no capacity: keep the known one.
        if (data.num_blocks_per_cache_level) table.capacity = data.num_blocks_per_cache_level.reduce((a, b) => a + b, 0);
        break;
      case 'stored':
        for (const block of data.blocks) table.add(block.block_hash);
        applied.stored += data.blocks.length;
        break;
      case 'removed':
        for (const hash of data.block_hashes) table.delete(hash);
        applied.removed += data.block_hashes.length;
        break;
      default:
        applied.ignored++;
        continue;
    }
    if (!isContinuation(event)) table.eventsApplied++;
    if (event.event_id >= 0) table.lastEventId = event.event_id;
  }
  return applied;
}

/**
 * Applies events to the block tables of the workers known under a URL, whichever source they
 * came from (this router's poll, another replica): an event whose event_id is not above the
 * last one applied for that URL was applied already and is skipped. A restarted worker numbers
 * its events from the start again: whoever sees that (the poller, whose drains never repeat an
 * event) calls `restart`.
 */
@Injectable()
export class KvEventApplier {
  constructor(
    private readonly workers: KvWorkers,
    @Optional() @Inject(KV_METRICS) private readonly metrics?: KvMetrics,
  ) {}

  /** Applies the new events of `events` (KV event parser objects); returns how many changed a table. */
  apply(serverUrl: string, events: readonly unknown[]): number {
    const entry = this.workers.get(serverUrl);
    if (!entry || events.length === 0) return 0;
    const fresh: KvCacheEvent[] = [];
    for (const event of events) {
      if (!isKvCacheEvent(event)) continue;
      // A part of a cut event is judged by the id of the event it belongs to.
      const id = event.continues ?? event.event_id;
      if (id >= 0 && entry.lastEventId !== undefined && id <= entry.lastEventId) continue;
      if (event.event_id >= 0) entry.lastEventId = event.event_id;
      fresh.push(event);
    }
    for (const worker of entry.workers) applyKvEvents(worker, fresh);
    // Counted once per URL: every worker under it got the same events.
    let applied = 0;
    for (const event of fresh) if (TABLE_EVENTS.has(event.data.type) && !isContinuation(event)) applied++;
    if (applied > 0) this.metrics?.kvEventsApplied(serverUrl, applied);
    return applied;
  }

  /** The highest event_id applied for the URL, if any. */
  lastEventId(serverUrl: string): number | undefined {
    return this.workers.get(serverUrl)?.lastEventId;
  }

  /**
   * The URL's tables were replaced by a snapshot taken after event `lastEventId` (another
   * replica's view): events up to it count as applied.
   */
  resumeAfter(serverUrl: string, lastEventId: number): void {
    const entry = this.workers.get(serverUrl);
    if (entry) entry.lastEventId = lastEventId;
  }

  /** The worker at the URL started a new event sequence (it restarted): every id is new again. */
  restart(serverUrl: string): void {
    const entry = this.workers.get(serverUrl);
    if (entry) entry.lastEventId = undefined;
  }
}

const TABLE_EVENTS: ReadonlySet<string> = new Set(['created', 'stored', 'removed']);

/** The shape the KV event parsers return: what applyKvEvents reads is there. */
function isKvCacheEvent(v: unknown): v is KvCacheEvent {
  if (typeof v !== 'object' || v === null) return false;
  const { event_id: id, data } = v as { event_id?: unknown; data?: unknown };
  if (typeof id !== 'number' || typeof data !== 'object' || data === null) return false;
  const d = data as { type?: unknown; blocks?: unknown; block_hashes?: unknown };
  if (d.type === 'stored') return Array.isArray(d.blocks);
  if (d.type === 'removed') return Array.isArray(d.block_hashes);
  return typeof d.type === 'string';
}
