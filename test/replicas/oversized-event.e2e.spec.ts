import { describe, expect, it } from '@jest/globals';
import { KvEventApplier, serializeKvEvents, type KvCacheEvent } from '../../src/kv-cache';
import { KvEventStream } from '../../src/replicas/kv-event-stream.service';
import { sampleValue, scrape } from '../observability/prom-text';
import { waitFor } from '../support/router-app';
import { confirmed, waitForOwnership } from './support/replica-cluster';
import { storedBlocks, useScriptedWorkerReplicas } from './support/scripted-worker-replicas';

const BLOCKS = 60_000;
const REMOVED = 20_000;
/** Beyond 2^53: every bit must survive the cut. */
const BASE = 18_000_000_000_000_000_000n;
const hashes = (from: number, n: number): bigint[] => Array.from({ length: n }, (_, i) => BASE + BigInt(from + i));

/**
 * One stored event and one removed event, each larger than a bus message (NATS' default
 * max_payload is 1 MB): the owner cuts them into parts, and the other replica applies the
 * parts from the stream as the events they were, without a snapshot filling the gap.
 */
describe('router replicas: one KV event larger than a bus message', () => {
  const fixture = useScriptedWorkerReplicas(['r1', 'r2']);
  const { replicas, drains } = fixture;

  it('reaches the other replica through the stream, cut into parts', async () => {
    await waitForOwnership(replicas, 1);
    const events: KvCacheEvent[] = [
      { event_id: 0, data: { type: 'created', num_blocks_per_cache_level: [BLOCKS * 2, 0] } },
      storedBlocks(1, hashes(0, BLOCKS)),
      { event_id: 2, data: { type: 'removed', block_hashes: hashes(0, REMOVED) } },
    ];
    drains.push(serializeKvEvents(events));
    const left = BLOCKS - REMOVED;
    const tableOf = (i: number) => confirmed(replicas[i].app, fixture.worker.url);
    const lastIdOf = (i: number) => replicas[i].app.get(KvEventApplier).lastEventId(fixture.worker.url);
    await waitFor(() => replicas.every((_, i) => tableOf(i).size === left && lastIdOf(i) === 2), 20_000, 'both replicas past the removal');

    const streams = replicas.map((r) => r.app.get(KvEventStream));
    const owner = streams.findIndex((s) => s.published > 0);
    const other = streams[1 - owner];
    // Neither event fit one message, and every part reached the stream.
    expect(streams[owner].published).toBeGreaterThan(3);
    expect({ unpublished: [...streams[owner].unpublished], why: streams[owner].lastFailure }).toEqual({ unpublished: [], why: undefined });
    await waitFor(() => other.received >= streams[owner].published, 10_000, 'every part read back');
    const table = tableOf(1 - owner);
    expect(table.has(BASE + BigInt(REMOVED - 1))).toBe(false);
    expect(table.has(BASE + BigInt(REMOVED)) && table.has(BASE + BigInt(BLOCKS - 1))).toBe(true);
    // The parts are counted as the three events they were (fewer if a snapshot came first), on both replicas.
    for (const replica of replicas) {
      const applied = sampleValue(await scrape(replica.url), 'disagg_router_kv_events_applied_total');
      expect(applied).toBeGreaterThan(0);
      expect(applied).toBeLessThanOrEqual(3);
    }
  });
});
