import { blockHashChain } from '../../../src/kv-cache';
import { abModule } from '../lib/ab-build';

/**
 * Hashing a whole prompt's blocks (v1_block_key, 32 tokens per block) with nothing cached: a
 * first turn, or the 9k-token text row with the cache off. µs per chain of `--tokens` ids,
 * median of the rounds. With an `--ab` build present (dist-bench/ab), its blockHashChain runs
 * alternately with this tree's in the same process, and both must give the same chain.
 *
 *   node test/bench/build.mjs [&& node test/bench/build.mjs --ab=<ref>] && node dist-bench/test/bench/routing/block-hash-cost.js [--tokens=9000 --rounds=12]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const TOKENS = Math.min(Number(args.get('tokens') ?? 9000), 1_000_000);
const ROUNDS = Math.min(Number(args.get('rounds') ?? 12), 100);
const CHAINS_PER_ROUND = 300;
const TPB = 32;

type Chain = typeof blockHashChain;

function builds(): Array<[string, Chain]> {
  const out: Array<[string, Chain]> = [['now', blockHashChain]];
  const before = abModule<{ blockHashChain: Chain }>('src/kv-cache/block-hash.js');
  if (before) out.unshift(['before', before.blockHashChain]);
  return out;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];

function main(): void {
  const ids = Array.from({ length: TOKENS }, (_, i) => (i * 7919) % 151_000);
  const chains = builds();
  const expected = chains[0][1](ids, TPB).join();
  for (const [name, chain] of chains) if (chain(ids, TPB).join() !== expected) throw new Error(`${name} gives another chain`);
  const spent = new Map<string, number[]>(chains.map(([name]) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which goes first, so neither always runs on a warmer machine.
    for (const [name, chain] of round % 2 ? [...chains].reverse() : chains) {
      const t = process.hrtime.bigint();
      for (let i = 0; i < CHAINS_PER_ROUND; i++) chain(ids, TPB);
      spent.get(name)!.push(Number(process.hrtime.bigint() - t) / CHAINS_PER_ROUND / 1000);
    }
  }
  const blocks = Math.ceil((TOKENS - 1) / TPB);
  for (const [name, us] of spent) console.log(`${name}: ${median(us).toFixed(1)} µs per ${TOKENS}-token chain (${blocks} blocks), median of ${ROUNDS} rounds`);
  if (spent.size === 2) console.log(`now / before: ${(median(spent.get('now')!) / median(spent.get('before')!)).toFixed(2)}x`);
}

main();
