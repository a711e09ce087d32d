import { Injectable } from '@nestjs/common';
import { normalizeServerUrl } from '../config';
import type { KvCacheEvent } from '../kv-cache/kv-events';
import { applyKvEvents } from '../routing/kv';
import { ServerRegistry, type ServerState } from '../servers';

/** The highest event id applied to any of the worker's block tables. */
export function lastAppliedEventId(server: ServerState): number | undefined {
  let last: number | undefined;
  for (const t of server.kvTables.values()) if (t.lastEventId !== undefined && (last === undefined || t.lastEventId > last)) last = t.lastEventId;
  return last;
}

/**
 * Applies a worker's events, from its own poll or from the bus, to that worker's block
 * tables, skipping events whose event_id is not above the last applied one: an event the
 * owner applied when it polled and then received again from the stream applies once.
 */
@Injectable()
export class KvEventApplier {
  constructor(private readonly registry: ServerRegistry) {}

  apply(serverUrl: string, events: readonly unknown[]): number {
    let url: string;
    try {
      url = normalizeServerUrl(serverUrl);
    } catch {
      return 0;
    }
    let applied = 0;
    for (const server of this.registry.list()) {
      if (server.url !== url) continue;
      const last = lastAppliedEventId(server) ?? -1;
      const fresh = (events as readonly KvCacheEvent[]).filter((e) => typeof e?.event_id === 'number' && e.event_id > last);
      if (fresh.length) applyKvEvents(server, fresh);
      applied = Math.max(applied, fresh.length);
    }
    return applied;
  }
}
