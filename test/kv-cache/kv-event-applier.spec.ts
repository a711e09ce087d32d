import { describe, expect, it } from '@jest/globals';
import { KvEventApplier, KvWorkers, type KvCacheEvent, type KvMetrics } from '../../src/kv-cache';
import { ServerState } from '../../src/servers';

const URL_A = 'http://127.0.0.1:9301';

const stored = (id: number, ...hashes: bigint[]): KvCacheEvent => ({
  event_id: id,
  data: { type: 'stored', parent_hash: null, blocks: hashes.map((h) => ({ type: 'stored_block', block_hash: h, tokens: [], lora_id: null, cache_level: 0, priority: 35 })) },
});
const removed = (id: number, ...hashes: bigint[]): KvCacheEvent => ({ event_id: id, data: { type: 'removed', block_hashes: hashes } });
const created = (id: number): KvCacheEvent => ({ event_id: id, data: { type: 'created', num_blocks_per_cache_level: [64, 0] } });

function setup() {
  const counted: Array<[string, number]> = [];
  const metrics: KvMetrics = { kvEventsApplied: (url, n) => counted.push([url, n]), kvPollError: () => undefined };
  const workers = new KvWorkers();
  const server = new ServerState({ url: URL_A, role: 'generation', source: 'config' });
  workers.attach(server);
  return { applier: new KvEventApplier(workers, metrics), workers, server, counted };
}

describe('KvEventApplier', () => {
  it('applies each event once, whichever source delivers it, and counts what it applied', () => {
    const { applier, server, counted } = setup();
    const batch = [created(0), stored(1, 1n, 2n), stored(2, 3n)];
    expect(applier.apply(URL_A, batch)).toBe(3);
    expect(new Set(server.kvTable().keys())).toEqual(new Set([1n, 2n, 3n]));
    server.kvTable().delete(3n); // what a later removed event would do
    // The same events again (another replica's copy): nothing changes, nothing counted.
    expect(applier.apply(URL_A, batch.slice(1))).toBe(0);
    expect(server.kvTable().has(3n)).toBe(false);
    // A batch overlapping the applied ones: only the new events count.
    expect(applier.apply(URL_A, [stored(2, 3n), removed(3, 1n), { event_id: 4, data: { type: 'updated', block_hash: 2n } }])).toBe(1);
    expect(server.kvTable().has(1n)).toBe(false);
    expect(counted).toEqual([[URL_A, 3], [URL_A, 1]]);
  });

  it('starts over when told the worker restarted: its events are numbered from the start again', () => {
    const { applier, server } = setup();
    applier.apply(URL_A, [created(0), stored(1, 1n), stored(2, 2n)]);
    expect(applier.lastEventId(URL_A)).toBe(2);
    // A copy of the first batch is a duplicate...
    expect(applier.apply(URL_A, [created(0), stored(1, 7n)])).toBe(0);
    applier.restart(URL_A);
    // ...the same ids after a restart are a new cache.
    expect(applier.apply(URL_A, [created(0), stored(1, 7n)])).toBe(2);
    expect([...server.kvTable().keys()]).toEqual([7n]);
  });

  it('resumes after a snapshot: events up to its last id count as applied', () => {
    const { applier, server } = setup();
    server.kvTable().add(4n); // the snapshot's blocks, put in place by its adopter
    applier.resumeAfter(URL_A, 9);
    expect(applier.apply(URL_A, [stored(8, 1n), stored(9, 2n)])).toBe(0);
    expect(applier.apply(URL_A, [stored(10, 3n)])).toBe(1);
    expect(new Set(server.kvTable().keys())).toEqual(new Set([4n, 3n]));
  });

  it('feeds every state under the URL, ignores unknown URLs and malformed entries, forgets a removed worker', () => {
    const { applier, workers, server } = setup();
    const context = new ServerState({ url: URL_A, role: 'context', source: 'config' });
    workers.attach(context);
    expect(applier.apply(URL_A, [stored(5, 9n), null, 'x', { event_id: 6, data: { type: 'stored' } }, { data: { type: 'removed', block_hashes: [9n] } }])).toBe(1);
    expect(server.kvTable().has(9n) && context.kvTable().has(9n)).toBe(true);
    expect(applier.apply('http://127.0.0.1:1', [stored(1, 1n)])).toBe(0);

    workers.detach(server);
    workers.detach(context);
    expect(workers.size).toBe(0);
    // Back under the same URL: a new worker, whose events are all new.
    const again = new ServerState({ url: URL_A, role: 'generation', source: 'config' });
    workers.attach(again);
    expect(applier.apply(URL_A, [stored(5, 9n)])).toBe(1);
    expect(again.kvTable().has(9n)).toBe(true);
  });
});
