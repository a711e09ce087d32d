import { describe, expect, it } from '@jest/globals';
import {
  KvCacheEvent,
  KvEventParseError,
  KvStoredData,
  parseJsonWithBigInt,
  parseKvEvents,
  serializeKvEvents,
} from '../../src/kv-cache/kv-events';

const BIG = 12809241085271551977n; // > 2^63
const events: KvCacheEvent[] = [
  { event_id: 1, data: { type: 'created', num_blocks_per_cache_level: [4096, 0] }, window_size: 4096 },
  {
    event_id: 2,
    data: {
      type: 'stored',
      parent_hash: 18446744073709551615n,
      blocks: [
        {
          type: 'stored_block',
          block_hash: BIG,
          tokens: [{ type: 'unique_token', token_id: 100, token_extra_id: 0 }],
          lora_id: null,
          cache_level: 0,
          priority: 35,
        },
      ],
    },
  },
  { event_id: 3, data: { type: 'removed', block_hashes: [BIG, 5n, 9007199254740993n] } },
  { event_id: 4, data: { type: 'updated', block_hash: 6705859311431260313n, cache_level: { old_value: 0, new_value: 1 } } },
];

describe('kv-events serializer and parser', () => {
  it('writes 64-bit hashes as bare JSON numbers', () => {
    const text = serializeKvEvents(events);
    expect(text).toContain('"block_hash":12809241085271551977');
    expect(text).toContain('"parent_hash":18446744073709551615');
    expect(text).toContain('"block_hashes":[12809241085271551977,5,9007199254740993]');
    // Plain JSON.parse would round it: the text really carries all the digits.
    expect(BigInt(Math.round(JSON.parse(text)[1].data.blocks[0].block_hash))).not.toBe(BIG);
  });

  it('round-trips events without losing bits, the blocks\' token lists dropped', () => {
    const withoutTokens = structuredClone(events);
    for (const b of (withoutTokens[1].data as KvStoredData).blocks) b.tokens = [];
    expect(parseKvEvents(serializeKvEvents(events))).toEqual(withoutTokens);
  });

  it('turns every v1 hash into a bigint, small ones included, and keeps other numbers as numbers', () => {
    const parsed = parseKvEvents('[{"event_id":7,"data":{"type":"removed","block_hashes":[1,2]},"window_size":32}]');
    expect(parsed[0]).toEqual({ event_id: 7, data: { type: 'removed', block_hashes: [1n, 2n] }, window_size: 32 });
    expect(typeof parsed[0].event_id).toBe('number');
  });

  it('keeps v2_sha256 hex hashes as strings', () => {
    const hex = 'a3f1c0ffee00112233445566778899aabbccddeeff00112233445566778899aa';
    const parsed = parseKvEvents(
      JSON.stringify([
        { event_id: 1, hash_algo: 'v2_sha256', data: { type: 'stored', parent_hash: null, blocks: [{ type: 'stored_block', block_hash: hex, tokens: [] }] } },
        { event_id: 2, data: { type: 'removed', hash_algo: 'v2_sha256', block_hashes: [hex] } },
      ]),
    );
    expect((parsed[0].data as KvStoredData).blocks[0].block_hash).toBe(hex);
    expect(parsed[0].hash_algo).toBe('v2_sha256');
    expect(parsed[1].data).toEqual({ type: 'removed', hash_algo: 'v2_sha256', block_hashes: [hex] });
  });

  it('accepts events without a data wrapper, as TensorRT-LLM does', () => {
    const parsed = parseKvEvents('[{"id":3,"type":"removed","block_hashes":[12809241085271551977]}]');
    expect(parsed[0].event_id).toBe(3);
    expect(parsed[0].data).toMatchObject({ type: 'removed', block_hashes: [BIG] });
  });

  it('rejects bodies that are not an event array', () => {
    expect(() => parseKvEvents('{"a":1}')).toThrow(KvEventParseError);
    expect(() => parseKvEvents('[1')).toThrow(KvEventParseError);
    expect(() => parseKvEvents('[{"event_id":1,"data":{"type":"removed","block_hashes":[null]}}]')).toThrow(KvEventParseError);
  });

  it('parseJsonWithBigInt keeps safe integers and fractions as numbers', () => {
    expect(parseJsonWithBigInt('{"a":1.5,"b":9007199254740991,"c":9007199254740992,"d":-3}')).toEqual({
      a: 1.5,
      b: 9007199254740991,
      c: 9007199254740992n,
      d: -3,
    });
  });
});
