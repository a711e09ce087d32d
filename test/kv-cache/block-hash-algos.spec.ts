import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { blockHashChain } from '../../src/kv-cache/block-hash';
import { v2Sha256Chain, v2Sha256x64Chain } from '../../src/kv-cache/block-hash-v2';
import { cacheSaltId, cacheSaltIdOf } from '../../src/kv-cache/cache-salt';
import { blockHashesFor, SUPPORTED_HASH_ALGOS } from '../../src/kv-cache/block-hashes';

interface Vector {
  name: string;
  tokens: number[];
  tpb: number;
  salt_id: string | null;
  v1_block_key: string[];
  v2_sha256: string[];
  v2_sha256_64: string[];
}

// Produced by fixtures/gen_block_hash_vectors.py, an independent restatement in Python.
const { vectors } = JSON.parse(readFileSync(join(process.cwd(), 'test/kv-cache/fixtures/block-hash-vectors.json'), 'utf8')) as { vectors: Vector[] };

describe('block-hash algorithms and the cache salt', () => {
  it('derives the salt id as TensorRT-LLM does', () => {
    expect(cacheSaltId('abc')).toBe(3697813978277427044n);
    expect(cacheSaltId('tenant-a')).toBe(cacheSaltId('tenant-a'));
    expect(cacheSaltId('tenant-a')).not.toBe(cacheSaltId('tenant-b'));
    expect(cacheSaltIdOf({ cache_salt: 'abc' })).toBe(3697813978277427044n);
    expect(cacheSaltIdOf({ cache_salt: 12 })).toBeUndefined();
    expect(cacheSaltIdOf({})).toBeUndefined();
  });

  it.each(vectors.map((v) => [`${v.name}, salt ${v.salt_id ?? 'none'}`, v] as const))('matches the reference keys: %s', (_name, v) => {
    const salt = v.salt_id === null ? undefined : BigInt(v.salt_id);
    expect(blockHashChain(v.tokens, v.tpb, undefined, salt).map(String)).toEqual(v.v1_block_key);
    expect(v2Sha256Chain(v.tokens, v.tpb, salt)).toEqual(v.v2_sha256);
    expect(v2Sha256x64Chain(v.tokens, v.tpb, salt).map(String)).toEqual(v.v2_sha256_64);
    expect(blockHashesFor([v.tokens], v.tpb, 'v2_sha256', salt)).toEqual([v.v2_sha256]);
  });

  it('a salt changes every block key, the unsalted v1 keys stay the known ones', () => {
    const tokens = Array.from({ length: 70 }, (_, i) => 100 + i);
    expect(blockHashChain(tokens, 32)).toEqual([12809241085271551977n, 6705859311431260313n, 9723244225814539085n]);
    for (const algo of SUPPORTED_HASH_ALGOS) {
      const plain = blockHashesFor([tokens], 32, algo)![0];
      const salted = blockHashesFor([tokens], 32, algo, cacheSaltId('tenant-a'))![0];
      expect(salted).toHaveLength(plain.length);
      salted.forEach((h, i) => expect(h).not.toEqual(plain[i]));
    }
  });

  it('knows the three algorithms and no other name', () => {
    expect([...SUPPORTED_HASH_ALGOS].sort()).toEqual(['v1_block_key', 'v2_sha256', 'v2_sha256_64']);
    expect(blockHashesFor([[1, 2, 3]], 2, 'v3_unknown')).toBeUndefined();
    expect(blockHashesFor([[1, 2, 3]], 2, 'toString')).toBeUndefined();
  });
});
