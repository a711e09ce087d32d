import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { blockHashChain } from '../../src/kv-cache/block-hash';
import { KvRemovedData, KvStoredData, parseJsonWithBigInt, parseKvEvents } from '../../src/kv-cache/kv-events';
import { SimWorker, startSimWorker } from '../../src/simulator';
import { postJson, range } from './sim-test-helpers';

async function drainText(worker: SimWorker): Promise<string> {
  const res = await fetch(`${worker.url}/kv_cache_events`, { method: 'POST' });
  expect(res.status).toBe(200);
  return res.text();
}

async function drain(worker: SimWorker) {
  return parseKvEvents(await drainText(worker));
}

/** The stored blocks' token lists as the worker wrote them (the router's parsers drop them). */
function wireTokens(text: string, event: number): Array<Array<{ token_id: number }>> {
  const raw = parseJsonWithBigInt(text) as Array<{ data: { blocks: Array<{ tokens: Array<{ token_id: number }> }> } }>;
  return raw[event].data.blocks.map((b) => b.tokens);
}

describe('simulated worker: KV cache events', () => {
  let w: SimWorker;

  beforeAll(async () => {
    // 4 blocks of 32 tokens: small enough to force evictions.
    w = await startSimWorker({ role: 'mixed', kvBlocks: 4, tokensPerBlock: 32, windowSize: 128, tokenizer: 'bytes' });
  });

  afterAll(async () => {
    await w.close();
  });

  it('starts with a created event, then stored blocks whose hashes equal blockHashChain', async () => {
    const prompt = range(100, 170);
    await postJson(`${w.url}/v1/completions`, { prompt, max_tokens: 2 });
    const text = await drainText(w);
    const events = parseKvEvents(text);
    expect(events.map((e) => e.data.type)).toEqual(['created', 'stored']);
    expect(events[0]).toEqual({ event_id: 1, data: { type: 'created', num_blocks_per_cache_level: [4, 0] }, window_size: 128 });
    const stored = events[1].data as KvStoredData;
    expect(events[1].event_id).toBe(2);
    expect(stored.parent_hash).toBeNull();
    const expected = blockHashChain(prompt, 32);
    expect(expected).toEqual([12809241085271551977n, 6705859311431260313n, 9723244225814539085n]);
    expect(stored.blocks.map((b) => b.block_hash)).toEqual(expected);
    const tokens = wireTokens(text, 1);
    expect(tokens[0][0]).toEqual({ type: 'unique_token', token_id: 100, token_extra_id: 0 });
    expect(tokens.map((t) => t.length)).toEqual([32, 32, 5]);
    expect(tokens[2].at(-1)!.token_id).toBe(168);
  });

  it('empties the log on each drain', async () => {
    expect(await drain(w)).toEqual([]);
  });

  it('stores only the new suffix, with the matched block as parent', async () => {
    const prompt = [...range(100, 164), ...range(900, 920)]; // shares two full blocks
    await postJson(`${w.url}/v1/completions`, { prompt, max_tokens: 1 });
    const events = await drain(w);
    expect(events).toHaveLength(1);
    const stored = events[0].data as KvStoredData;
    const chain = blockHashChain(prompt, 32);
    expect(stored.parent_hash).toBe(chain[1]);
    expect(stored.blocks.map((b) => b.block_hash)).toEqual(chain.slice(2));
    expect(events[0].event_id).toBe(3);
  });

  it('evicts least recently used blocks with a removed event when full', async () => {
    // Cache now: A0 A1 A2(partial) B2 -> 4 blocks, full.
    const before = new Set(w.kv.hashes());
    expect(before.size).toBe(4);
    const prompt = range(3000, 3070); // 3 new blocks
    await postJson(`${w.url}/v1/completions`, { prompt, max_tokens: 1 });
    const events = await drain(w);
    expect(events.map((e) => e.data.type)).toEqual(['removed', 'stored']);
    const removed = (events[0].data as KvRemovedData).block_hashes;
    expect(removed).toHaveLength(3);
    for (const h of removed) expect(before.has(h as bigint)).toBe(true);
    for (const h of blockHashChain(prompt, 32)) expect(w.kv.has(h)).toBe(true);
    expect(w.kv.size).toBe(4);
    expect(events[1].event_id).toBe(events[0].event_id + 1);
    for (const h of removed) expect(w.kv.has(h as bigint)).toBe(false);
  });

  it('writes 64-bit hashes as exact JSON numbers on the wire', async () => {
    await postJson(`${w.url}/v1/completions`, { prompt: range(100, 134), max_tokens: 1 });
    const text = await (await fetch(`${w.url}/kv_cache_events`, { method: 'POST' })).text();
    expect(text).toContain('"block_hash":12809241085271551977');
  });

  it('drops every block on clearKv through the control endpoint', async () => {
    const held = w.kv.hashes();
    const res = await postJson(`${w.url}/sim/control`, { clearKv: true });
    expect(res.body.ok).toBe(true);
    expect(w.kv.size).toBe(0);
    const events = await drain(w);
    expect(events).toHaveLength(1);
    expect((events[0].data as KvRemovedData).block_hashes).toEqual(held);
  });
});
