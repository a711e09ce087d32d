import type { KvCacheEvent } from './kv-events';
import type { ServerState } from '../servers';

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
export function applyKvEvents(server: ServerState, events: readonly KvCacheEvent[]): AppliedEvents {
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
        table.capacity = data.num_blocks_per_cache_level?.reduce((a, b) => a + b, 0);
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
    table.eventsApplied++;
    if (event.event_id >= 0) table.lastEventId = event.event_id;
  }
  return applied;
}
