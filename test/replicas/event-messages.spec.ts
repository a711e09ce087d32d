import { describe, expect, it } from '@jest/globals';
import { applyKvEvents, KvBlockTable, KvEventApplier, KvWorkers, parseKvEventsFast, type KvCacheEvent, type KvWorker } from '../../src/kv-cache';
import { ServerState } from '../../src/servers';
import { eventMessages } from '../../src/replicas/event-messages';
import { storedBlocks } from './support/scripted-worker-replicas';

const BASE = 18_000_000_000_000_000_000n;
const hashes = (from: number, n: number): bigint[] => Array.from({ length: n }, (_, i) => BASE + BigInt(from + i));

function worker(): KvWorker & { table: KvBlockTable } {
  const table = new KvBlockTable();
  return { url: 'http://127.0.0.1:1', kvHashAlgo: 'v1_block_key', table, kvTable: () => table };
}

async function messages(events: KvCacheEvent[], limit: number): Promise<string[]> {
  const out: string[] = [];
  for await (const text of eventMessages(events, limit)) out.push(text);
  return out;
}

describe('a drain as bus messages', () => {
  const drain: KvCacheEvent[] = [
    { event_id: 0, data: { type: 'created', num_blocks_per_cache_level: [200_000, 0] } },
    storedBlocks(1, hashes(0, 50_000)),
    storedBlocks(2, hashes(50_000, 3)),
    { event_id: 3, data: { type: 'removed', block_hashes: hashes(10, 30_000) } },
    { event_id: 4, data: { type: 'updated', block_hash: BASE, cache_level: 1, priority: null } } as unknown as KvCacheEvent,
    storedBlocks(5, hashes(90_000, 45_001)),
  ];

  it('cuts events larger than a message into parts that apply as the events did', async () => {
    const limit = 64 * 1024;
    const texts = await messages(drain, limit);
    for (const text of texts) expect(Buffer.byteLength(text)).toBeLessThanOrEqual(limit);
    const received = texts.flatMap((t) => parseKvEventsFast(t));
    // Each event's id once, on its last part, in order; the parts before carry -1.
    expect(received.map((e) => e.event_id).filter((id) => id >= 0)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(received.length).toBeGreaterThan(drain.length);
    // Tokens stay behind: tables need only the hashes.
    expect(texts.some((t) => t.includes('"tokens"'))).toBe(false);

    const fromParts = worker();
    for (const text of texts) applyKvEvents(fromParts, parseKvEventsFast(text));
    const whole = worker();
    applyKvEvents(whole, drain);
    expect(fromParts.table.size).toBe(whole.table.size);
    expect(new Set(fromParts.table.keys())).toEqual(new Set(whole.table.keys()));
    expect(fromParts.table.lastEventId).toBe(5);
  });

  it('skips the parts of events a replica already holds (a snapshot adopted while the parts were on the stream)', async () => {
    const texts = await messages(drain, 64 * 1024);
    const parts = texts.flatMap((t) => parseKvEventsFast(t));
    // Every part but the last of an event names the event it belongs to.
    expect(parts.filter((e) => e.event_id < 0).every((e) => e.continues !== undefined && e.continues >= 1)).toBe(true);
    const whole = worker();
    applyKvEvents(whole, drain);

    const workers = new KvWorkers();
    const server = new ServerState({ url: 'http://127.0.0.1:9302', role: 'generation', source: 'config' });
    workers.attach(server);
    const applier = new KvEventApplier(workers);
    // The other replica's snapshot, taken after event 3: the final tables but event 5.
    applier.apply(server.url, drain.slice(0, 5));
    expect(applier.lastEventId(server.url)).toBe(4);
    // The stream's parts of events 1 to 3 come after it: re-adding the blocks event 3 removed would undo it.
    for (const text of texts) applier.apply(server.url, parseKvEventsFast(text));
    expect(server.kvTable().size).toBe(whole.table.size);
    expect(new Set(server.kvTable().keys())).toEqual(new Set(whole.table.keys()));
    expect(applier.lastEventId(server.url)).toBe(5);
  });

  it('turns the event loop between slices of a large drain, and not for a small one', async () => {
    const turnsWhile = async (events: KvCacheEvent[]): Promise<number> => {
      let turns = 0;
      let done = false;
      const count = (): void => {
        if (done) return;
        turns++;
        setImmediate(count);
      };
      setImmediate(count);
      await messages(events, 512 * 1024);
      done = true;
      return turns;
    };
    expect(await turnsWhile([storedBlocks(1, hashes(0, 200_000))])).toBeGreaterThan(5);
    expect(await turnsWhile([storedBlocks(1, hashes(0, 100))])).toBe(0);
  });

  it('sends a drain that fits as one message', async () => {
    const small = [drain[0], drain[2], drain[4]];
    const texts = await messages(small, 1024 * 1024);
    expect(texts.length).toBe(1);
    expect(parseKvEventsFast(texts[0]).map((e) => e.event_id)).toEqual([0, 2, 4]);
  });
});
