import { afterAll, beforeAll } from '@jest/globals';
import type { KV } from '@nats-io/kv';
import type { KvCacheEvent } from '../../../src/kv-cache';
import { KvSnapshots, manifestKey as snapshotManifestKey } from '../../../src/replicas/kv-snapshots.service';
import { KvSync } from '../../../src/replicas/kv-sync.service';
import { rendezvousOwner } from '../../../src/replicas/rendezvous';
import { ReplicaBus } from '../../../src/replicas/replica-bus.service';
import { WorkerPositions } from '../../../src/replicas/worker-positions';
import { FakeWorker, generationHandler } from '../../support/fake-worker';
import { startNats, type NatsServer } from '../../support/nats-server';
import { startRouter, waitFor } from '../../support/router-app';
import { agreedOwners, clusterAdmin, confirmed, TOKEN, type Replica } from './replica-cluster';

/** What a snapshot manifest tells a test: who wrote it, at which position. */
export interface StoredManifest {
  replica: string;
  epoch?: number;
  last_event_id: number;
}

/** One scripted worker behind replicas that share a real NATS; its drains answer `drains` in order. */
export interface ScriptedWorkerReplicas {
  readonly nats: NatsServer;
  readonly worker: FakeWorker;
  readonly replicas: Replica[];
  /** What the worker's next `/kv_cache_events` answers, in order (then `[]`). */
  readonly drains: string[];
  /** Starts one more replica (fast leases, polls and snapshots); `urls`: its generation servers instead of the worker. */
  start(id: string, opts?: { urls?: string[] }): Promise<Replica>;
  /** Whether the replica's confirmed table of the worker holds exactly these blocks. */
  holds(r: Replica, hashes: readonly bigint[]): boolean;
  /** Waits until every drain was taken and every replica holds exactly these blocks. */
  allHold(hashes: readonly bigint[], what: string): Promise<void>;
  /** The worker's snapshot manifest as stored in the bus bucket (undefined: none). */
  storedManifest(): Promise<StoredManifest | undefined>;
  /**
   * Takes the worker's snapshot manifest, written after event `lastEventId`, out of the bucket;
   * the returned function puts it back as it was. It waits first until every replica's
   * resynchronisation (and so its hand-over snapshot) is done, the replicas agree on the
   * worker's poller, that poller is the worker's rendezvous owner (no hand-back due), and it
   * wrote a snapshot at this position: a poller writes again only when its view moves or the
   * lease moves, and a lease can then move only to a replica started later, which writes
   * nothing while its tables have a gap.
   */
  hideSnapshot(lastEventId: number): Promise<() => Promise<void>>;
}

/** Registers beforeAll/afterAll: NATS, the worker, and replicas `ids` started in order (`cluster`: settings over the fast ones). */
export function useScriptedWorkerReplicas(ids: readonly string[], cluster: { lease_ttl_s?: number } = {}): ScriptedWorkerReplicas {
  let nats: NatsServer | undefined;
  let worker: FakeWorker | undefined;
  const replicas: Replica[] = [];
  const drains: string[] = [];
  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is not started yet (use it inside a test)`);
    return value;
  };

  const fixture: ScriptedWorkerReplicas = {
    get nats() {
      return started(nats, 'nats-server');
    },
    get worker() {
      return started(worker, 'the worker');
    },
    replicas,
    drains,
    async start(id, { urls = [fixture.worker.url] } = {}) {
      const router = await startRouter({
        generation_servers: { urls, router: { type: 'kv_cache_aware', tokenizer: 'bytes', tokens_per_block: 16 } },
        admin: { token: TOKEN },
        health: { interval_s: 0.2 },
        cluster: { bus: fixture.nats.url, replica_id: id, lease_ttl_s: 1, poll_interval_ms: 20, snapshot_interval_s: 0.2, load_interval_ms: 20, ...cluster },
      });
      const replica = { ...router, id };
      replicas.push(replica);
      return replica;
    },
    holds(r, hashes) {
      const table = confirmed(r.app, fixture.worker.url);
      return table.size === hashes.length && hashes.every((h) => table.has(h));
    },
    async allHold(hashes, what) {
      try {
        await waitFor(() => drains.length === 0 && replicas.every((r) => fixture.holds(r, hashes)), 15_000, what);
      } catch (err) {
        // What each replica holds instead and where its bus work stands, for a failure seen only on a loaded machine.
        const url = fixture.worker.url;
        const views = await Promise.all(replicas.map(async (r) => {
          const positions = r.app.get(WorkerPositions);
          const held = `${r.id}: [${[...confirmed(r.app, url)].join(', ')}] epoch ${positions.epoch(url)}${positions.hasGap(url) ? ' (gap)' : ''}`;
          const v = await clusterAdmin(r).catch((e: Error) => e.message);
          if (typeof v === 'string') return `${held}, admin view: ${v}`;
          return `${held}, bus ${v.bus.state} (resyncs ${v.bus.resyncs}, retries ${v.bus.retries}), stream at ${v.stream.last_seq} (${v.stream.received} read), snapshots adopted ${v.snapshots.adopted}, written ${v.snapshots.written}, owner ${v.workers[0]?.owner ?? 'none'}`;
        }));
        const stored = await fixture.storedManifest().catch(() => undefined);
        const manifest = stored ? `stored snapshot by ${stored.replica} at ${stored.epoch ?? 0}:${stored.last_event_id}` : 'no stored snapshot';
        throw new Error(`${(err as Error).message} (${drains.length} drains not taken; ${manifest}; ${views.join('; ')})`);
      }
    },
    async storedManifest() {
      const entry = await bucket().get(manifestKey());
      return entry?.operation === 'PUT' ? entry.json<StoredManifest>() : undefined;
    },
    async hideSnapshot(lastEventId) {
      const url = fixture.worker.url;
      // A resynchronisation still retrying would write its hand-over snapshot over the hidden one.
      await Promise.all(replicas.map((r) => r.app.get(KvSync).settled()));
      const settledOwner = async (): Promise<Replica | undefined> => {
        const id = (await agreedOwners(replicas, 1))?.get(url);
        // Held by another replica than its rendezvous owner: a hand-back is due, and the new owner writes.
        if (id === undefined || id !== rendezvousOwner(url, replicas.map((r) => r.id).sort())) return undefined;
        return replicas.find((r) => r.id === id);
      };
      await waitFor(async () => {
        const owner = await settledOwner();
        const written = owner?.app.get(KvSnapshots).writtenPosition(url);
        return written?.endsWith(`:${lastEventId}`) === true && (await fixture.storedManifest())?.last_event_id === lastEventId;
      }, 20_000, `the worker's settled poller wrote the snapshot after event ${lastEventId}`);
      const kv = bucket();
      const entry = await kv.get(manifestKey());
      if (entry?.operation !== 'PUT') throw new Error('no stored snapshot to hide');
      const value = entry.value;
      await kv.delete(manifestKey());
      return async () => {
        await kv.put(manifestKey(), value);
      };
    },
  };
  // Through the first replica's own bus connection: the test reads and edits the bucket as a replica would.
  const bucket = (): KV => {
    const kv = replicas[0]?.app.get(ReplicaBus).snapshots;
    if (!kv) throw new Error('no replica is connected to the bus');
    return kv;
  };
  const manifestKey = (): string => snapshotManifestKey(fixture.worker.url);

  beforeAll(async () => {
    nats = await startNats();
    const w = await new FakeWorker(generationHandler()).start();
    w.kvEvents = () => drains.shift() ?? '[]';
    worker = w;
    for (const id of ids) await fixture.start(id);
  });
  afterAll(async () => {
    for (const r of replicas) await r.close().catch(() => undefined);
    await worker?.close();
    await nats?.close();
  });
  return fixture;
}

/** A `created` event: the worker's cache (re)starts empty. */
export function createdCache(id: number): KvCacheEvent {
  return { event_id: id, data: { type: 'created', num_blocks_per_cache_level: [64, 0] } };
}

/** A `stored` event of blocks with these hashes (no parent, no tokens). */
export function storedBlocks(id: number, hashes: readonly bigint[]): KvCacheEvent {
  return {
    event_id: id,
    data: { type: 'stored', parent_hash: null, blocks: hashes.map((h) => ({ type: 'stored_block', block_hash: h, tokens: [], lora_id: null, cache_level: 0, priority: 35 })) },
  };
}
