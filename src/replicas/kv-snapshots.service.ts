import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { KV, KvEntry } from '@nats-io/kv';
import { randomUUID } from 'node:crypto';
import { normalizeServerUrl } from '../config';
import { KvEventApplier } from '../kv-cache';
import { ServerRegistry, type ServerState } from '../servers';
import { decodeBlocks, encodeBlocks, type EncodedBlocks } from './block-codec';
import { ReplicaBus } from './replica-bus.service';
import { busKeyOf } from './rendezvous';
import { joinParts, partBytesFor, splitParts } from './snapshot-parts';
import { WatchSlot } from './watch-slot';
import { isAhead, WorkerPositions } from './worker-positions';

type Tables = Record<string, { blocks: EncodedBlocks; capacity?: number }>;

/** Where a worker's snapshot stands; its tables are in `parts` values under the `p.` keys. */
interface Manifest {
  url: string;
  replica: string;
  at: number;
  /** The worker's restart epoch (see WorkerPositions); absent: 0. */
  epoch?: number;
  last_event_id: number;
  /** Stream sequence the writer had applied: the stream after it holds the rest. */
  stream_seq: number;
  generation: string;
  parts: number;
}

interface Snapshot extends Manifest {
  tables: Tables;
}

const MANIFESTS = 'm.>';
/** Reads of one manifest key while its writer keeps overwriting it, at most. */
const TORN_READ_ATTEMPTS = 5;
/** Bucket key of a worker's snapshot manifest. */
export const manifestKey = (url: string): string => `m.${busKeyOf(url)}`;
const partKey = (url: string, i: number): string => `p.${busKeyOf(url)}.${i}`;

/**
 * Block-table snapshots in a KV bucket, written by each worker's poller: per worker a
 * manifest (`m.<worker>`: position, generation, part count) and the tables as JSON cut into
 * parts (`p.<worker>.<i>`) that each fit a bus message, so a worker's snapshot has no size
 * limit. Parts are written before the manifest; a reader that finds a part of another
 * generation drops the read (a newer manifest follows). A replica that starts (or comes
 * back from an outage) adopts every snapshot ahead of its view, then reads the stream from
 * the oldest snapshot's sequence: it catches up without replaying the stream from zero.
 * Blocks recorded on routing are not in snapshots (they expire within `routed_blocks_ttl_s`).
 */
@Injectable()
export class KvSnapshots implements OnModuleDestroy {
  private readonly logger = new Logger('KvSnapshots');
  /** Position (epoch:last event id) written per worker, so unchanged tables are not written again. */
  private readonly written = new Map<string, string>();
  adopted = 0;
  writes = 0;
  /** Parts of the last snapshot written (admin view). */
  lastParts = 0;
  /** Workers whose snapshot is being written (its parts are overwritten in place: one writer at a time). */
  private readonly inWrite = new Set<string>();

  private readonly watching: WatchSlot;

  constructor(
    private readonly bus: ReplicaBus,
    private readonly registry: ServerRegistry,
    private readonly applier: KvEventApplier,
    private readonly positions: WorkerPositions,
  ) {
    this.watching = new WatchSlot(bus, 'the snapshot watch');
  }

  /** Adopts every stored snapshot ahead of this replica's view; the lowest stream sequence they cover (undefined: none). */
  async loadAll(): Promise<number | undefined> {
    const kv = this.bus.snapshots;
    if (!kv) return undefined;
    let lowest: number | undefined;
    const keys = await this.bus.call(() => this.manifestKeys());
    for (const key of keys) {
      const snap = await this.readLatest(kv, key);
      if (!snap) continue;
      this.adopt(snap);
      lowest = lowest === undefined ? snap.stream_seq : Math.min(lowest, snap.stream_seq);
    }
    return lowest;
  }

  /**
   * The bucket's manifest keys (deleted ones too: their reads find no snapshot), from the
   * subjects its stream holds: one request per page of subjects, each bounded by the client's
   * timeout. Not the KV client's key listing: that opens a push consumer whose first delivery
   * can be lost under load, and then the listing, with the resynchronisation behind it, waits
   * for the consumer's idle heartbeat, 30 s (README "Running several replicas", catch-up).
   */
  private async manifestKeys(): Promise<string[]> {
    const jsm = this.bus.jsm;
    if (!jsm) throw new Error('the bus has no JetStream manager');
    const prefix = `$KV.${this.bus.names.snapshots}.`;
    const info = await jsm.streams.info(`KV_${this.bus.names.snapshots}`, { subjects_filter: `${prefix}${MANIFESTS}` });
    return Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
  }

  /**
   * The worker's tables have a gap (see WorkerPositions.markGap): adopts its stored snapshot
   * when that is at or ahead of this replica's position. Called by the stream reader before it
   * reads on, so no later message is applied before the snapshot replaces the tables.
   */
  async repair(url: string): Promise<void> {
    if (!this.positions.hasGap(url)) return;
    try {
      await this.adoptStored(url);
    } catch (err) {
      this.logger.debug(`snapshot of ${url} not read for a gap: ${(err as Error).message}`);
    }
  }

  /**
   * Adopts the worker's stored snapshot when it is ahead of this replica's view. For a worker
   * registered after the last resynchronisation (admin API, discovery): the watch brings only
   * the snapshots written from now on. Throws when the bus did not answer.
   */
  async adoptStored(url: string): Promise<void> {
    const kv = this.bus.snapshots;
    if (!kv) return;
    const snap = await this.readLatest(kv, manifestKey(url));
    if (snap) this.adopt(snap);
  }

  /** Follows snapshots other replicas write (one ahead of our view means we missed events); see WatchSlot.follow. */
  async watch(): Promise<void> {
    const kv = this.bus.snapshots;
    if (!kv) return;
    await this.watching.follow(
      async () => {
        const watch = await kv.watch({ key: MANIFESTS });
        // Its first delivery (every manifest as it stands) can be lost under load, as the key
        // listing's was: what was written before it opened is read once more, the parts of the
        // snapshots ahead of this view only. Later writes come through it.
        void this.adoptAhead(kv).catch((err: Error) => this.logger.debug(`snapshots not read after the watch opened: ${err.message}`));
        return watch;
      },
      async (entry) => {
        if (!this.othersAhead(parseManifest(entry))) return;
        const snap = await this.read(kv, entry);
        if (snap) this.adopt(snap);
      },
    );
  }

  /** Adopts the stored snapshots that other replicas wrote ahead of this replica's view. Throws when the bus did not answer. */
  private async adoptAhead(kv: KV): Promise<void> {
    for (const key of await this.bus.call(() => this.manifestKeys())) {
      const entry = await this.bus.call(() => kv.get(key));
      if (!this.othersAhead(entry ? parseManifest(entry) : undefined)) continue;
      const snap = await this.bus.call(() => this.readLatest(kv, key));
      if (snap) this.adopt(snap);
    }
  }

  /** The position (`epoch:last event id`) of the worker's last snapshot this replica wrote; it writes again only past it (or forced). */
  writtenPosition(url: string): string | undefined {
    return this.written.get(normalizeServerUrl(url));
  }

  /** Whether this replica is writing the worker's snapshot (a lease hand-back waits for it). */
  writing(url: string): boolean {
    return this.inWrite.has(url);
  }

  /** Writes the worker's snapshot when its tables moved since the last write (or `force`). */
  async write(server: ServerState, streamSeq: number, force = false): Promise<boolean> {
    if (this.inWrite.has(server.url)) return false;
    this.inWrite.add(server.url);
    try {
      return await this.writeNow(server, streamSeq, force);
    } finally {
      this.inWrite.delete(server.url);
    }
  }

  private async writeNow(server: ServerState, streamSeq: number, force: boolean): Promise<boolean> {
    const kv = this.bus.snapshots;
    const last = this.applier.lastEventId(server.url);
    // Tables with a gap would overwrite the snapshot that can fill it, at the same position; a
    // hand-over (forced) still goes: the events only this replica polled matter more than the gap.
    if (!kv || last === undefined || (!force && this.positions.hasGap(server.url))) return false;
    const epoch = this.positions.epoch(server.url);
    const position = `${epoch}:${last}`;
    if (!force && this.written.get(server.url) === position) return false;
    const tables: Tables = {};
    for (const [algo, t] of server.kvTables) tables[algo] = { blocks: encodeBlocks(t.keys()), capacity: t.capacity };
    const generation = randomUUID();
    const parts = splitParts(Buffer.from(JSON.stringify(tables)), generation, partBytesFor(this.bus.nc?.info?.max_payload));
    const manifest: Manifest = { url: server.url, replica: this.bus.replicaId, at: Date.now(), epoch, last_event_id: last, stream_seq: streamSeq, generation, parts: parts.length };
    let aheadOfMine = false;
    const ok = await this.bus.attempt('snapshot', async () => {
      const before = await kv.get(manifestKey(server.url));
      const stored = before ? parseManifest(before) : undefined;
      // Another replica's hand-over ahead of this view (this poller's periodic write raced it
      // after an outage): written over, its events would be lost on every replica.
      if (stored && isAhead({ epoch: stored.epoch ?? 0, lastEventId: stored.last_event_id }, { epoch, lastEventId: last })) {
        aheadOfMine = true;
        return;
      }
      const stale = stored?.parts ?? 0;
      for (let i = 0; i < parts.length; i++) await kv.put(partKey(server.url, i), parts[i]);
      await kv.put(manifestKey(server.url), JSON.stringify(manifest));
      // A smaller snapshot than the one before: its extra parts go.
      for (let i = parts.length; i < stale; i++) await kv.delete(partKey(server.url, i));
    });
    if (aheadOfMine) {
      await this.adoptStored(server.url).catch((err: Error) => this.logger.debug(`snapshot of ${server.url} ahead of this view not read: ${err.message}`));
      return false;
    }
    if (ok) {
      this.written.set(server.url, position);
      this.writes++;
      this.lastParts = parts.length;
    }
    return ok;
  }

  /** Whether this replica's view of the worker is ahead of its stored snapshot (or none is stored). */
  async aheadOfStored(url: string): Promise<boolean> {
    const mine = this.position(url);
    if (mine.lastEventId === undefined) return false;
    const entry = await this.bus.snapshots?.get(manifestKey(url)).catch(() => null);
    const stored = entry ? parseManifest(entry) : undefined;
    return !stored || isAhead(mine, { epoch: stored.epoch ?? 0, lastEventId: stored.last_event_id });
  }

  private position(url: string): { epoch: number; lastEventId?: number } {
    return { epoch: this.positions.epoch(url), lastEventId: this.applier.lastEventId(url) };
  }

  /** A manifest another replica wrote, ahead of this replica's view (the watch and its re-read adopt only those). */
  private othersAhead(m: Manifest | undefined): m is Manifest {
    return m !== undefined && m.replica !== this.bus.replicaId && this.isAheadOfMine(m);
  }

  /** Ahead of this replica's view; or, while its tables have a gap, at the same position too. */
  private isAheadOfMine(m: Manifest): boolean {
    const theirs = { epoch: m.epoch ?? 0, lastEventId: m.last_event_id };
    const mine = this.position(m.url);
    return isAhead(theirs, mine) || (this.positions.hasGap(m.url) && !isAhead(mine, theirs));
  }

  /**
   * The snapshot under a manifest key. A read that caught parts of a newer write (the writer
   * puts its parts, then its manifest) reads that newer manifest again: a replica starting
   * while the owner writes must not miss the snapshot and replay the stream without it.
   */
  private async readLatest(kv: KV, key: string): Promise<Snapshot | undefined> {
    let generation: string | undefined;
    for (let attempt = 0; attempt < TORN_READ_ATTEMPTS; attempt++) {
      const entry = await kv.get(key);
      const manifest = entry ? parseManifest(entry) : undefined;
      // Gone, unreadable, or the same torn generation again: nothing newer to read.
      if (!entry || !manifest || manifest.generation === generation) return undefined;
      generation = manifest.generation;
      const snap = await this.read(kv, entry);
      if (snap) return snap;
    }
    return undefined;
  }

  /** The manifest's snapshot with its parts; undefined when unreadable or overwritten meanwhile. */
  private async read(kv: KV, entry: KvEntry): Promise<Snapshot | undefined> {
    const manifest = parseManifest(entry);
    if (!manifest) return undefined;
    try {
      const parts = await Promise.all(Array.from({ length: manifest.parts }, (_, i) => kv.get(partKey(manifest.url, i))));
      const body = joinParts(parts.map((p) => (p?.operation === 'PUT' ? p.value : undefined)), manifest.generation);
      const tables = body && (JSON.parse(body.toString('utf8')) as Tables);
      return tables && typeof tables === 'object' ? { ...manifest, tables } : undefined;
    } catch (err) {
      this.logger.debug(`snapshot of ${manifest.url} not read: ${(err as Error).message}`);
      return undefined;
    }
  }

  /** Replaces the confirmed blocks of a worker whose snapshot is ahead of this replica's view. */
  private adopt(snap: Snapshot): void {
    if (!this.isAheadOfMine(snap)) return;
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
    this.positions.setEpoch(snap.url, snap.epoch ?? 0);
    this.positions.clearGap(snap.url);
    this.positions.setStreamSeq(snap.url, Math.max(this.positions.streamSeq(snap.url), snap.stream_seq));
    this.adopted++;
  }

  onModuleDestroy(): void {
    this.watching.stop();
  }
}

function parseManifest(entry: KvEntry): Manifest | undefined {
  if (entry.operation !== 'PUT') return undefined;
  try {
    const m = entry.json<Manifest>();
    if (typeof m?.url !== 'string' || typeof m.last_event_id !== 'number' || typeof m.stream_seq !== 'number') return undefined;
    if (typeof m.generation !== 'string' || !Number.isInteger(m.parts) || m.parts < 1 || m.parts > 10_000) return undefined;
    m.url = normalizeServerUrl(m.url);
    return m;
  } catch {
    return undefined;
  }
}
