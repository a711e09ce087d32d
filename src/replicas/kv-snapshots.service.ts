import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { KvEntry } from '@nats-io/kv';
import { normalizeServerUrl } from '../config';
import { ServerRegistry, type ServerState } from '../servers';
import { decodeBlocks, encodeBlocks, type EncodedBlocks } from './block-codec';
import { ReplicaBus } from './replica-bus.service';
import { lastAppliedEventId } from './replica-event-applier';
import { busKeyOf } from './rendezvous';

/** A worker's block tables as its poller knew them, and where on the stream that was. */
interface Snapshot {
  url: string;
  replica: string;
  at: number;
  last_event_id: number;
  /** Stream sequence the writer had applied: the stream after it holds the rest. */
  stream_seq: number;
  tables: Record<string, { blocks: EncodedBlocks; capacity?: number }>;
}

/**
 * Block-table snapshots in a KV bucket, one key per worker, written by the worker's poller.
 * A replica that starts (or comes back from an outage) adopts every snapshot newer than what
 * it has, then reads the stream from the oldest snapshot's sequence: it catches up without
 * replaying the stream from zero. Blocks recorded on routing are not in snapshots (they
 * expire within `routed_blocks_ttl_s` anyway).
 */
@Injectable()
export class KvSnapshots implements OnModuleDestroy {
  private readonly logger = new Logger('KvSnapshots');
  /** Last event id written per worker, so unchanged tables are not written again. */
  private readonly written = new Map<string, number>();
  private watchStop?: () => void;
  adopted = 0;
  writes = 0;

  constructor(
    private readonly bus: ReplicaBus,
    private readonly registry: ServerRegistry,
  ) {}

  /** Adopts every stored snapshot newer than this replica's tables; the lowest stream sequence they cover (undefined: none). */
  async loadAll(): Promise<number | undefined> {
    const kv = this.bus.snapshots;
    if (!kv) return undefined;
    let lowest: number | undefined;
    const keys: string[] = [];
    for await (const key of await kv.keys()) keys.push(key);
    for (const key of keys) {
      const entry = await kv.get(key);
      const snap = entry && parseSnapshot(entry);
      if (!snap) continue;
      this.adopt(snap);
      lowest = lowest === undefined ? snap.stream_seq : Math.min(lowest, snap.stream_seq);
    }
    return lowest;
  }

  /** Follows snapshots other replicas write (one newer than our table means we missed events). */
  async watch(): Promise<void> {
    this.watchStop?.();
    const kv = this.bus.snapshots;
    if (!kv) return;
    try {
      const iter = await kv.watch({ key: '>' });
      this.watchStop = () => iter.stop();
      for await (const entry of iter) {
        const snap = parseSnapshot(entry);
        if (snap && snap.replica !== this.bus.replicaId) this.adopt(snap);
      }
    } catch (err) {
      if (this.bus.connected) this.logger.warn(`snapshot watch ended: ${(err as Error).message}`);
    }
  }

  /** Writes the worker's snapshot when its tables moved since the last write (or `force`). */
  async write(server: ServerState, streamSeq: number, force = false): Promise<boolean> {
    const kv = this.bus.snapshots;
    const last = lastAppliedEventId(server);
    if (!kv || last === undefined) return false;
    if (!force && this.written.get(server.url) === last) return false;
    const tables: Snapshot['tables'] = {};
    for (const [algo, t] of server.kvTables) tables[algo] = { blocks: encodeBlocks(t.keys()), capacity: t.capacity };
    const snap: Snapshot = { url: server.url, replica: this.bus.replicaId, at: Date.now(), last_event_id: last, stream_seq: streamSeq, tables };
    const ok = await this.bus.attempt('snapshot', () => kv.put(busKeyOf(server.url), JSON.stringify(snap)));
    if (ok) {
      this.written.set(server.url, last);
      this.writes++;
    }
    return ok;
  }

  /** The stored snapshot's last event id for a worker (undefined: none or unreadable). */
  async storedEventId(url: string): Promise<number | undefined> {
    const entry = await this.bus.snapshots?.get(busKeyOf(url)).catch(() => null);
    return entry ? parseSnapshot(entry)?.last_event_id : undefined;
  }

  /** Replaces the confirmed blocks of a worker whose snapshot is ahead of its tables. */
  private adopt(snap: Snapshot): void {
    for (const server of this.registry.list()) {
      if (server.url !== snap.url) continue;
      const mine = lastAppliedEventId(server);
      if (mine !== undefined && mine >= snap.last_event_id) continue;
      for (const [algo, { blocks, capacity }] of Object.entries(snap.tables)) {
        const table = server.kvTable(algo);
        const keep = new Set(decodeBlocks(blocks));
        for (const h of table.keys()) if (!keep.has(h)) table.delete(h);
        for (const h of keep) table.add(h);
        table.capacity = capacity;
        table.lastEventId = snap.last_event_id;
      }
      this.adopted++;
    }
  }

  onModuleDestroy(): void {
    this.watchStop?.();
  }
}

function parseSnapshot(entry: KvEntry): Snapshot | undefined {
  if (entry.operation !== 'PUT') return undefined;
  try {
    const snap = entry.json<Snapshot>();
    if (typeof snap?.url !== 'string' || typeof snap.last_event_id !== 'number' || typeof snap.stream_seq !== 'number' || typeof snap.tables !== 'object') return undefined;
    snap.url = normalizeServerUrl(snap.url);
    return snap;
  } catch {
    return undefined;
  }
}
