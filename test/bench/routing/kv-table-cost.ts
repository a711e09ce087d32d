import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { KvBlockTable } from '../../../src/kv-cache';

/**
 * The KV-aware hot path's block-table lookups (has() per block of a prompt, through
 * matchPrefix): ns per lookup against a table of `sizes` confirmed 64-bit blocks (20,000: one
 * shard; 50,000: two; 1.1M: about 64, see src/kv-cache/u64-block-store.ts), prompts of 64
 * blocks of which the first `hits` are in the table. With an `--ab` build present
 * (dist-bench/ab), its KvBlockTable runs alternately with this tree's, in the same process.
 * Then the longest single add() while a table grows to the largest size (a shard's split).
 *
 *   node test/bench/build.mjs [&& node test/bench/build.mjs --ab=<ref>] && node dist-bench/test/bench/routing/kv-table-cost.js [--sizes=20000,50000,1100000 --rounds=5]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const SIZES = (args.get('sizes') ?? '20000,50000,1100000').split(',').map(Number);
const ROUNDS = Number(args.get('rounds') ?? 5);
const CHAIN = 64;
const HITS = 48;
const PROMPTS = 2000;

type Table = Pick<KvBlockTable, 'add' | 'matchPrefix'>;
type TableClass = new () => Table;

function builds(): Array<[string, TableClass]> {
  const out: Array<[string, TableClass]> = [['after', KvBlockTable]];
  const ab = resolve('dist-bench/ab/src/kv-cache/kv-block-table.js');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (existsSync(ab)) out.unshift(['before', (require(ab) as { KvBlockTable: TableClass }).KvBlockTable]);
  return out;
}

/** Prompts whose first HITS blocks are in a table of `size` blocks (hashes 1..size) and the rest not. */
function promptsFor(size: number): bigint[][] {
  const prompts: bigint[][] = [];
  for (let p = 0; p < PROMPTS; p++) {
    const start = 1 + ((p * 7919) % Math.max(1, size - HITS));
    const chain: bigint[] = [];
    for (let i = 0; i < HITS; i++) chain.push(BigInt(start + i));
    for (let i = HITS; i < CHAIN; i++) chain.push(BigInt(size + 1 + p * CHAIN + i));
    prompts.push(chain);
  }
  return prompts;
}

function lookupNs(table: Table, prompts: bigint[][]): number {
  const now = performance.now();
  const t = process.hrtime.bigint();
  let matched = 0;
  for (const chain of prompts) matched += table.matchPrefix(chain, now);
  const ns = Number(process.hrtime.bigint() - t);
  if (matched !== prompts.length * HITS) throw new Error(`matched ${matched}`);
  // Lookups: HITS hits and one miss per prompt.
  return ns / (prompts.length * (HITS + 1));
}

function main(): void {
  const classes = builds();
  console.log('| blocks | build | ns per lookup (rounds) |\n|---|---|---|');
  for (const size of SIZES) {
    const prompts = promptsFor(size);
    const tables = classes.map(([name, Cls]) => {
      const table = new Cls();
      for (let i = 1; i <= size; i++) table.add(BigInt(i));
      return { name, table, ns: [] as number[] };
    });
    for (let round = 0; round < ROUNDS + 1; round++) {
      for (const t of tables) {
        const ns = lookupNs(t.table, prompts);
        if (round > 0) t.ns.push(Math.round(ns));
      }
    }
    for (const t of tables) console.log(`| ${size} | ${t.name} | ${[...t.ns].sort((a, b) => a - b).join(', ')} |`);
  }
  const largest = Math.max(...SIZES);
  console.log(`\n| build | longest add() ms growing to ${largest} blocks |\n|---|---|`);
  for (const [name, Cls] of classes) {
    const table = new Cls();
    let longest = 0;
    for (let i = 1; i <= largest; i++) {
      const t = performance.now();
      table.add(BigInt(i));
      longest = Math.max(longest, performance.now() - t);
    }
    console.log(`| ${name} | ${longest.toFixed(1)} |`);
  }
}

main();
