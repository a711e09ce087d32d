import { describe, expect, it } from '@jest/globals';
import { blockHash, blockHashChain } from '../../src/kv-cache/block-hash';

// Straightforward BigInt transcription of TensorRT-LLM's hash_v1_block_key, as an oracle.
const M64 = (1n << 64n) - 1n;
const M32 = (1n << 32n) - 1n;
function refMix32(value: bigint, seed: bigint): bigint {
  let v = value & M32;
  v = (((v >> 16n) ^ v) * 0x45d9f3bn) & M32;
  v = (((v >> 16n) ^ v) * 0x45d9f3bn) & M32;
  v = ((v >> 16n) ^ v) & M32;
  v = (v + 0x9e3779b9n) & M32;
  return (seed ^ ((v + ((seed << 6n) & M64) + (seed >> 2n)) & M64)) & M64;
}
function refMix64(value: bigint, seed: bigint): bigint {
  let v = value & M64;
  v = ((v ^ (v >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  v = ((v ^ (v >> 27n)) * 0x94d049bb133111ebn) & M64;
  v = (v ^ (v >> 31n)) & M64;
  return (seed ^ ((v + 0x9e3779b9n + ((seed << 6n) & M64) + (seed >> 2n)) & M64)) & M64;
}
function refBlockHash(tokens: number[], parent = 0n, lora?: bigint): bigint {
  let seed = (BigInt(tokens.length) ^ ((parent * 0xbf58476d1ce4e5b9n) & M64)) & M64;
  for (const t of tokens) seed = refMix32(BigInt(t), seed);
  if (lora !== undefined) seed = refMix64(lora, seed);
  return seed;
}
function refChain(ids: number[], tpb: number): bigint[] {
  const out: bigint[] = [];
  for (let t = 0; t < ids.length - 1; t += tpb) {
    out.push(refBlockHash(ids.slice(t, Math.min(t + tpb, ids.length - 1)), t === 0 ? 0n : out[out.length - 1]));
  }
  return out;
}
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

describe('blockHash (v1_block_key)', () => {
  it('matches the protocol vectors', () => {
    expect(blockHash([1, 2, 3, 4])).toBe(924206229973855n);
    expect(blockHash([0])).toBe(2654435832n);
    expect(blockHash([128000, 9906, 11, 1917], 12345678901234567n)).toBe(10272336948027656806n);
  });

  it('hashes an empty block to the seed of its parent', () => {
    expect(blockHash([])).toBe(0n);
    expect(blockHash([], 1n)).toBe(0xbf58476d1ce4e5b9n);
  });

  it('wraps token ids >= 2^31 and >= 2^32 like uint32', () => {
    for (const t of [2 ** 31, 2 ** 32 - 1, 2 ** 32 + 5, 2 ** 40 + 123]) {
      expect(blockHash([t, 7])).toBe(refBlockHash([t, 7]));
    }
    expect(blockHash([2 ** 32 + 5])).toBe(blockHash([5]));
  });

  it('handles parents >= 2^63 and all-ones parents', () => {
    for (const p of [1n << 63n, M64, (1n << 63n) + 12345n, 18446744073709551557n]) {
      expect(blockHash([9, 8, 7], p)).toBe(refBlockHash([9, 8, 7], p));
    }
  });

  it('mixes a LoRA task id last', () => {
    expect(blockHash([1, 2, 3], 0n, 42)).toBe(refBlockHash([1, 2, 3], 0n, 42n));
    expect(blockHash([1, 2, 3], 0n, 42n)).not.toBe(blockHash([1, 2, 3]));
    expect(blockHash([1, 2, 3], 5n, 1n << 63n)).toBe(refBlockHash([1, 2, 3], 5n, 1n << 63n));
  });

  it('agrees with a plain BigInt implementation on pseudo-random blocks', () => {
    let s = 12345;
    const rnd = (): number => (s = (Math.imul(s, 1103515245) + 12345) >>> 0);
    // Halves of all ones or zero too: the parent's product is taken on 32-bit halves.
    const half = (): bigint => BigInt([0, 0xffffffff, 1][rnd() % 8] ?? rnd());
    for (let k = 0; k < 2000; k++) {
      const tokens = Array.from({ length: rnd() % 40 }, () => rnd() % 200_000);
      const parent = (half() << 32n) | half();
      expect(blockHash(tokens, parent)).toBe(refBlockHash(tokens, parent));
    }
  });
});

describe('blockHashChain', () => {
  it('matches the protocol vector: tokens 100..169, 32 per block, partial last block hashed', () => {
    expect(blockHashChain(range(100, 170), 32)).toEqual([
      12809241085271551977n,
      6705859311431260313n,
      9723244225814539085n,
    ]);
  });

  it('chains each block on the previous hash over the first N-1 tokens', () => {
    const ids = range(100, 170);
    const chain = blockHashChain(ids, 32);
    expect(chain[0]).toBe(blockHash(ids.slice(0, 32)));
    expect(chain[1]).toBe(blockHash(ids.slice(32, 64), chain[0]));
    expect(chain[2]).toBe(blockHash(ids.slice(64, 69), chain[1]));
  });

  it('gives no blocks for an empty or one-token prompt', () => {
    expect(blockHashChain([], 32)).toEqual([]);
    expect(blockHashChain([5], 32)).toEqual([]);
    expect(blockHashChain([5, 6], 32)).toEqual([blockHash([5])]);
  });

  it('never keys the last token: 64 tokens with 32 per block give a full block and a 31-token block', () => {
    const ids = range(0, 64);
    const chain = blockHashChain(ids, 32);
    expect(chain).toHaveLength(2);
    expect(chain[1]).toBe(blockHash(ids.slice(32, 63), chain[0]));
    // One token more and the second block is full; two more and a third block appears.
    expect(blockHashChain(range(0, 65), 32)).toHaveLength(2);
    expect(blockHashChain(range(0, 66), 32)).toHaveLength(3);
    expect(blockHashChain(range(0, 65), 32)[1]).toBe(blockHash(range(32, 64), chain[0]));
  });

  it('equals the reference for many lengths and block sizes, and accepts typed arrays', () => {
    const ids = Array.from({ length: 300 }, (_, i) => (i * 7919) % 151_000);
    for (const tpb of [1, 4, 16, 32, 64]) {
      for (const n of [0, 1, 2, 31, 32, 33, 63, 64, 65, 299, 300]) {
        expect(blockHashChain(ids.slice(0, n), tpb)).toEqual(refChain(ids.slice(0, n), tpb));
      }
    }
    expect(blockHashChain(Uint32Array.from(ids), 32)).toEqual(refChain(ids, 32));
  });

  it('rejects a non-positive tokens_per_block', () => {
    expect(() => blockHashChain([1, 2, 3], 0)).toThrow(RangeError);
  });

  it('hashes an 8k-token prompt in well under half a millisecond', () => {
    const ids = Array.from({ length: 8192 }, (_, i) => (i * 7919) % 151_000);
    for (let i = 0; i < 50; i++) blockHashChain(ids, 32);
    // Best single run: robust against other test files competing for the CPU.
    let ms = Infinity;
    for (let i = 0; i < 200; i++) {
      const t0 = process.hrtime.bigint();
      blockHashChain(ids, 32);
      ms = Math.min(ms, Number(process.hrtime.bigint() - t0) / 1e6);
    }
    console.log(`8k-token hash chain: ${ms.toFixed(3)} ms (best of 200)`);
    expect(ms).toBeLessThan(0.5);
  });
});
