import { describe, expect, it } from '@jest/globals';
import { parseKvEvents, serializeKvEvents, type KvStoredData } from '../../src/kv-cache/kv-events';
import { applyKvEvents, parseKvEventsFast } from '../../src/kv-cache';
import { SimKvCache } from '../../src/simulator';
import { servers, tokens } from '../routing/support/policy-harness';

describe('parsing and applying KV cache events', () => {
  const sim = () => new SimKvCache({ capacityBlocks: 8, tokensPerBlock: 4, windowSize: 4096, maxBufferedEvents: 1000 });

  it('parses exactly like the lossless parser: created, stored, removed, 64-bit hashes', () => {
    const kv = sim();
    kv.admit(tokens(25));
    kv.admit(tokens(25, 50_000)); // evicts: a removed event
    const text = serializeKvEvents(kv.drainEvents());
    expect(text).toMatch(/"block_hash":\d{17,}/); // beyond 2^53: precision matters
    const fast = parseKvEventsFast(text);
    expect(fast).toEqual(parseKvEvents(text));
    expect(fast.map((e) => e.data.type)).toEqual(['created', 'stored', 'removed', 'stored']);
    // The per-token objects (most of a real drain) are never read: both parsers drop them.
    expect(text).toContain('"unique_token"');
    const stored = fast[1].data as KvStoredData;
    expect(stored.blocks.length).toBeGreaterThan(0);
    expect(stored.blocks.every((b) => Array.isArray(b.tokens) && b.tokens.length === 0)).toBe(true);
  });

  it('handles the other layouts: no data wrapper, hex hashes, updated events, odd spacing', () => {
    const text = `[
      {"event_id": 1, "type": "stored", "parent_hash": 18446744073709551615, "blocks": [{"type": "stored_block", "block_hash": 12809241085271551977, "tokens": []}]},
      {"event_id": 2, "data": {"type": "removed", "block_hashes": [ 12809241085271551977 , 5 ]}, "hash_algo": "v1_block_key"},
      {"event_id": 3, "data": {"type": "stored", "parent_hash": null, "blocks": [{"block_hash": "00ffab"}], "hash_algo": "v2_sha256"}},
      {"event_id": 4, "data": {"type": "updated", "block_hash": 6705859311431260313, "cache_level": {"old_value": 0, "new_value": 1}}},
      {"event_id": 5, "data": {"type": "stored", "parent_hash": null, "blocks": [{"block_hash": 7, "tokens": [{"token_id": 1, "note": "[not a list]"}]}]}}
    ]`;
    expect(parseKvEventsFast(text)).toEqual(parseKvEvents(text));
    // A token list holding a bracket is not emptied in the text: the parse empties it.
    expect((parseKvEventsFast(text)[4].data as KvStoredData).blocks[0].tokens).toEqual([]);
    expect(() => parseKvEventsFast('not json')).toThrow();
  });

  it('applies them to the server block tables, per hash algorithm', () => {
    const [s] = servers(1);
    const kv = sim();
    kv.admit(tokens(25));
    applyKvEvents(s, parseKvEventsFast(serializeKvEvents(kv.drainEvents())));
    expect(new Set(s.kvTable().keys())).toEqual(new Set(kv.hashes()));
    expect(s.kvTable().capacity).toBe(8);
    kv.admit(tokens(25, 50_000));
    applyKvEvents(s, parseKvEventsFast(serializeKvEvents(kv.drainEvents())));
    expect(new Set(s.kvTable().keys())).toEqual(new Set(kv.hashes()));
    applyKvEvents(s, parseKvEventsFast('[{"event_id": 9, "data": {"type": "stored", "parent_hash": null, "blocks": [{"block_hash": "abc"}], "hash_algo": "v2_sha256"}}]'));
    expect(s.kvTable('v2_sha256').has('abc')).toBe(true);
    expect(s.kvTable('v1_block_key').has('abc')).toBe(false);
    expect(s.kvTable('v1_block_key').lastEventId).toBeGreaterThan(0);
    // A tagged event tells the algorithm the worker hashes with from now on.
    expect(s.kvHashAlgo).toBe('v2_sha256');
  });
});
