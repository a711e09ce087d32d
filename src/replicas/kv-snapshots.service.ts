import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { KvEntry } from '@nats-io/kv';
import { normalizeServerUrl } from '../config';
import { KvEventApplier } from '../kv-cache';
import { ServerRegistry, type ServerState } from '../servers';
import { decodeBlocks, encodeBlocks, type EncodedBlocks } from './block-codec';
import { ReplicaBus } from './replica-bus.service';
import { busKeyOf } from './rendezvous';
import { isAhead, WorkerPositions } from './worker-positions';

/** A worker's block tables as its poller knew them, and where on the stream that was. */
interface Snapshot {
  url: string;
  replica: string;
  at: number;
  /** The worker's restart epoch (see WorkerPositions); absent: 0. */
  epoch?: number;
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
  /** Position (epoch:last event id) written per worker, so unchanged tables are not written again. */
  private readonly written = new Map<string, string>();
  private watchStop?: () => void;
  adopted = 0;
  writes = 0;

  constructor(
    private readonly bus: ReplicaBus,
    private readonly registry: ServerRegistry,
    private readonly applier: KvEventApplier,
    private readonly positions: WorkerPositions,
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
    const last = this.applier.lastEventId(server.url);
    if (!kv || last === undefined) return false;
    const epoch = this.positions.epoch(server.url);
    const position = `${epoch}:${last}`;
    if (!force && this.written.get(server.url) === position) return false;
    const tables: Snapshot['tables'] = {};
    for (const [algo, t] of server.kvTables) tables[algo] = { blocks: encodeBlocks(t.keys()), capacity: t.capacity };
    const snap: Snapshot = { url: server.url, replica: this.bus.replicaId, at: Date.now(), epoch, last_event_id: last, stream_seq: streamSeq, tables };
    const ok = await this.bus.attempt('snapshot', () => kv.put(busKeyOf(server.url), JSON.stringify(snap)));
    if (ok) {
      this.written.set(server.url, position);
      this.writes++;
    }
    return ok;
  }

  /** Whether this replica's view of the worker is ahead of its stored snapshot (or none is stored). */
  async aheadOfStored(url: string): Promise<boolean> {
    const mine = this.position(url);
    if (mine.lastEventId === undefined) return false;
    const entry = await this.bus.snapshots?.get(busKeyOf(url)).catch(() => null);
    const stored = entry ? parseSnapshot(entry) : undefined;
    return !stored || isAhead(mine, { epoch: stored.epoch ?? 0, lastEventId: stored.last_event_id });
  }

  private position(url: string): { epoch: number; lastEventId?: number } {
    return { epoch: this.positions.epoch(url), lastEventId: this.applier.lastEventId(url) };
  }

  /** Replaces the confirmed blocks of a worker whose snapshot is ahead of this replica's view. */
  private adopt(snap: Snapshot): void {
    const epoch = snap.epoch ?? 0;
    if (!isAhead({ epoch, lastEventId: snap.last_event_id }, this.position(snap.url))) return;
    const servers = this.registry.list().filter((s) => s.url === snap.url);
    if (!servers.length) return;
    for (const server of servers) {
      for (const [algo, { blocks, capacity }] of Object.entries(snap.tables)) {
        const table = server.kvTable(algo);
        const keep = new Set(decodeBlocks(blocks));
        for (const h of table.keys()) if (!keep.has(h)) table.delete(h);
        for (const h of keep) table.add(h);
        table.capacity = capacity;
        table.lastEventId = snap.last_event_id;
      }
    }
    this.applier.resumeAfter(snap.url, snap.last_event_id);
    this.positions.setEpoch(snap.url, epoch);
    this.positions.setStreamSeq(snap.url, Math.max(this.positions.streamSeq(snap.url), snap.stream_seq));
    this.adopted++;
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
