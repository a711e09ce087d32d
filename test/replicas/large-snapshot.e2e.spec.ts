import { describe, expect, it } from '@jest/globals';
import { serializeKvEvents, type KvCacheEvent } from '../../src/kv-cache';
import { KvEventStream } from '../../src/replicas/kv-event-stream.service';
import { KvSnapshots } from '../../src/replicas/kv-snapshots.service';
import { busKeyOf } from '../../src/replicas/rendezvous';
import { ReplicaBus } from '../../src/replicas/replica-bus.service';
import { waitFor } from '../support/router-app';
import { confirmed, waitForOwnership, type Replica } from './support/replica-cluster';
import { storedBlocks, useScriptedWorkerReplicas } from './support/scripted-worker-replicas';

const BLOCKS = 60_000;
const PER_EVENT = 1_000;
/** Beyond 2^53: every bit must survive the parts. */
const BASE = 18_000_000_000_000_000_000n;

const storedEvent = (id: number, from: number, n: number): KvCacheEvent => storedBlocks(id, Array.from({ length: n }, (_, i) => BASE + BigInt(from + i)));

/**
 * A worker with more cached blocks than one bus message holds (NATS' default max_payload is
 * 1 MB, about 45k block hashes as a snapshot): its drain travels as several stream messages,
 * its snapshot as several parts, and a replica starting later rebuilds the table from them.
 */
describe('router replicas: a worker with a large KV cache', () => {
  const fixture = useScriptedWorkerReplicas(['r1', 'r2']);
  const { replicas, drains } = fixture;
  const size = (r: Replica): number => confirmed(r.app, fixture.worker.url).size;

  it('reaches the other replica through the stream and a late one through a snapshot in parts', async () => {
    await waitForOwnership(replicas, 1);
    const events: KvCacheEvent[] = [{ event_id: 0, data: { type: 'created', num_blocks_per_cache_level: [BLOCKS * 2, 0] } }];
    for (let i = 0; i < BLOCKS / PER_EVENT; i++) events.push(storedEvent(i + 1, i * PER_EVENT, PER_EVENT));
    drains.push(serializeKvEvents(events));
    await waitFor(() => replicas.every((r) => size(r) === BLOCKS), 30_000, 'both replicas hold every block');

    const streams = replicas.map((r) => r.app.get(KvEventStream));
    // The drain did not fit one message.
    const published = streams.reduce((n, s) => n + s.published, 0);
    expect(published).toBeGreaterThan(1);
    // Every message read back, then one more event: the snapshot written after it sits behind them on the stream.
    await waitFor(() => streams.every((s) => s.lastSeq >= published), 10_000, 'the stream read back');
    const lastId = BLOCKS / PER_EVENT + 1;
    drains.push(serializeKvEvents([storedEvent(lastId, BLOCKS, 1)]));
    await waitFor(() => replicas.every((r) => size(r) === BLOCKS + 1), 10_000, 'the last event everywhere');
    // The owner's snapshot on the bus: a manifest naming its parts.
    const bucket = replicas[0].app.get(ReplicaBus).snapshots!;
    let manifest: { last_event_id: number; parts: number } | undefined;
    await waitFor(async () => {
      manifest = (await bucket.get(`m.${busKeyOf(fixture.worker.url)}`))?.json();
      return manifest?.last_event_id === lastId;
    }, 10_000, 'the snapshot after the last event');
    expect(manifest!.parts).toBeGreaterThan(1);

    const late = await fixture.start('late');
    await waitFor(() => size(late) === BLOCKS + 1, 30_000, 'the late replica holds every block');
    const table = confirmed(late.app, fixture.worker.url);
    expect(table.has(BASE) && table.has(BASE + BigInt(BLOCKS))).toBe(true);
    expect(late.app.get(KvSnapshots).adopted).toBeGreaterThan(0);
    // From the snapshot, not the stream: it read fewer messages than the drain took.
    expect(late.app.get(KvEventStream).received).toBeLessThan(published);
    // Room for every wait above, so a slow step fails by its own name.
  }, 90_000);
});
