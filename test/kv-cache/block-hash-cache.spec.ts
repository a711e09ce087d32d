import { describe, expect, it } from '@jest/globals';
import { BlockHashCache } from '../../src/kv-cache/block-hash-cache';
import { cacheSaltId } from '../../src/kv-cache/cache-salt';
import { blockKeyChain, KV_HASH_ALGOS } from '../../src/kv-cache/hash-algos';
import { mulberry32 } from '../../src/simulator/seeded-random';

/** The same prompts on every run. */
const random = mulberry32;

const ids = (n: number, rnd: () => number): number[] => Array.from({ length: n }, () => Math.floor(rnd() * 150_000));
const SALTS = [undefined, cacheSaltId('tenant-a'), cacheSaltId('tenant-b')];

describe('BlockHashCache', () => {
  it('gives the uncached chains for conversations, branches, retries and salts, in every algorithm', () => {
    const rnd = random(7);
    for (const algo of KV_HASH_ALGOS) {
      for (const tpb of [1, 4, 7, 32]) {
        const cache = new BlockHashCache();
        const system = ids(3 * tpb + 2, rnd);
        let turn = system;
        const prompts: number[][] = [];
        for (let i = 0; i < 6; i++) {
          turn = [...turn, ...ids(1 + Math.floor(rnd() * 3 * tpb), rnd)];
          prompts.push(turn);
        }
        // A branch off an earlier turn, one cut inside a block, one on a boundary, a retry.
        prompts.push([...prompts[2], ...ids(tpb + 1, rnd)]);
        prompts.push(prompts[4].slice(0, 2 * tpb + 1));
        prompts.push(prompts[4].slice(0, 2 * tpb));
        prompts.push(prompts[3]);
        prompts.push([...system.slice(0, tpb), ...ids(2 * tpb, rnd)]);
        for (const salt of SALTS) {
          for (const p of prompts) expect(cache.chain(algo, p, tpb, salt)).toEqual(blockKeyChain(algo, p, tpb, salt));
        }
        // The retry and most turns resumed an earlier chain.
        expect(cache.reusedBlocks).toBeGreaterThan(cache.hashedBlocks);
      }
    }
  });

  it('reuses a chain within one algorithm, block size and salt only', () => {
    const cache = new BlockHashCache();
    const prompt = ids(200, random(1));
    for (const algo of KV_HASH_ALGOS) {
      for (const salt of SALTS) {
        for (const tpb of [16, 32]) {
          const hitsBefore = cache.hits;
          expect(cache.chain(algo, prompt, tpb, salt)).toEqual(blockKeyChain(algo, prompt, tpb, salt));
          expect(cache.hits).toBe(hitsBefore);
          expect(cache.chain(algo, prompt, tpb, salt)).toEqual(blockKeyChain(algo, prompt, tpb, salt));
          expect(cache.hits).toBe(hitsBefore + 1);
        }
      }
    }
    expect(cache.size).toBe(KV_HASH_ALGOS.length * SALTS.length * 2);
  });

  it('compares tokens as the hashes read them (uint32)', () => {
    const cache = new BlockHashCache();
    const prompt = ids(40, random(3));
    const wrapped = prompt.map((t, i) => (i % 3 ? t : t + 2 ** 32));
    cache.chain('v1_block_key', prompt, 8);
    expect(cache.chain('v1_block_key', wrapped, 8)).toEqual(blockKeyChain('v1_block_key', wrapped, 8));
    expect(cache.hits).toBe(1);
  });

  it('hands out copies: changing a returned chain changes no later answer', () => {
    const cache = new BlockHashCache();
    const prompt = ids(100, random(4));
    const first = cache.chain('v2_sha256', prompt, 16)!;
    first.length = 1;
    first[0] = 'changed';
    expect(cache.chain('v2_sha256', prompt, 16)).toEqual(blockKeyChain('v2_sha256', prompt, 16));
    const lists = cache.chains([prompt, prompt.slice(0, 50)], 16, 'v1_block_key');
    expect(lists).toEqual([blockKeyChain('v1_block_key', prompt, 16), blockKeyChain('v1_block_key', prompt.slice(0, 50), 16)]);
  });

  it('keeps one prompt per conversation: a turn replaces the one it extends', () => {
    const cache = new BlockHashCache();
    const rnd = random(5);
    let turn = ids(64, rnd);
    for (let i = 0; i < 10; i++) {
      turn = [...turn, ...ids(40, rnd)];
      cache.chain('v1_block_key', turn, 32);
    }
    expect(cache.size).toBe(1);
    expect(cache.tokens).toBe(turn.length - 1);
    // Each turn hashed only the blocks after the previous turn's full ones.
    expect(cache.hashedBlocks).toBe(Math.ceil((turn.length - 1) / 32) + 9);
  });

  it('stays within its token and prompt bounds, and recomputes what it dropped', () => {
    const rnd = random(6);
    const small = new BlockHashCache({ maxTokens: 1_000, maxEntries: 3 });
    const prompts = Array.from({ length: 10 }, () => ids(300, rnd));
    for (const p of prompts) {
      expect(small.chain('v1_block_key', p, 32)).toEqual(blockKeyChain('v1_block_key', p, 32));
      expect(small.size).toBeLessThanOrEqual(3);
      expect(small.tokens).toBeLessThanOrEqual(1_000);
    }
    expect(small.chain('v1_block_key', prompts[0], 32)).toEqual(blockKeyChain('v1_block_key', prompts[0], 32));
    // A prompt over the whole budget is hashed, never stored.
    const huge = ids(2_000, rnd);
    expect(small.chain('v2_sha256_64', huge, 32)).toEqual(blockKeyChain('v2_sha256_64', huge, 32));
    expect(small.tokens).toBeLessThanOrEqual(1_000);
  });

  it("resumes each conversation's own chain when 64 of them share a system prompt, turns interleaved", () => {
    const rnd = random(8);
    const cache = new BlockHashCache();
    const system = ids(1_500, rnd);
    const conversations = Array.from({ length: 64 }, () => [...system]);
    let hashedAfterFirstTurns = 0;
    for (let turn = 0; turn < 6; turn++) {
      for (const c of conversations) {
        c.push(...ids(600, rnd));
        expect(cache.chain('v1_block_key', c, 32)).toEqual(blockKeyChain('v1_block_key', c, 32));
      }
      if (turn === 1) hashedAfterFirstTurns = cache.hashedBlocks;
    }
    // From the third turn on, each prompt hashes about its new 600 tokens (19 blocks), not its
    // whole history: at most 2 blocks more per prompt, for the ones cut inside a block.
    expect(cache.hashedBlocks - hashedAfterFirstTurns).toBeLessThanOrEqual(4 * 64 * (Math.ceil(600 / 32) + 2));
    expect(cache.size).toBe(64);
  });

  it('passes through what it does not cache: unknown algorithms, short prompts, bad block sizes', () => {
    const cache = new BlockHashCache();
    expect(cache.chain('v3_unknown', [1, 2, 3], 2)).toBeUndefined();
    expect(cache.chains([[1, 2, 3]], 2, 'toString')).toBeUndefined();
    expect(cache.chain('v1_block_key', [5, 6, 7], 4)).toEqual(blockKeyChain('v1_block_key', [5, 6, 7], 4));
    expect(cache.chain('v1_block_key', [], 4)).toEqual([]);
    expect(() => cache.chain('v1_block_key', [1, 2, 3], 0)).toThrow(RangeError);
    expect(cache.size).toBe(0);
  });
});
