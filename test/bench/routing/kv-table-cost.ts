import { execFileSync } from 'node:child_process';
import type { KvBlockTable } from '../../../src/kv-cache';
import { abPath } from '../lib/ab-build';

/**
 * The KV-aware hot path's block-table lookups (has() per block of a prompt, through
 * matchPrefix): ns per lookup against a table of `sizes` confirmed 64-bit blocks (20,000: one
 * shard; 50,000: two; 1.1M: about 64, see src/kv-cache/u64-block-store.ts), prompts of 64
 * blocks of which the first `hits` are in the table. With an `--ab` build present
 * (dist-bench/ab), its KvBlockTable runs alternately with this tree's, each run in a process of
 * its own: two tables of a million blocks in one process differ by up to 2x with the same code,
 * whichever was built first. Then the longest single add() while a table grows to the largest
 * size (a shard's split).
 *
 *   node test/bench/build.mjs [&& node test/bench/build.mjs --ab=<ref>] && node dist-bench/test/bench/routing/kv-table-cost.js [--sizes=20000,50000,1100000 --rounds=5 --runs=3]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const SIZES = (args.get('sizes') ?? '20000,50000,1100000').split(',').map(Number);
const ROUNDS = Number(args.get('rounds') ?? 5);
/** Processes per build, alternating between the builds. */
const RUNS = Math.min(Number(args.get('runs') ?? 3), 20);
const CHAIN = 64;
const HITS = 48;
const PROMPTS = 2000;

type Table = Pick<KvBlockTable, 'add' | 'matchPrefix'>;
type TableClass = new () => Table;

/** The builds by name, each loaded only when asked for: a process measuring one loads no other. */
function builds(): Array<[string, () => TableClass]> {
  const out: Array<[string, () => TableClass]> = [
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    ['after', () => (require('../../../src/kv-cache/kv-block-table') as { KvBlockTable: TableClass }).KvBlockTable],
  ];
  const ab = abPath('src/kv-cache/kv-block-table.js');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (ab) out.unshift(['before', () => (require(ab) as { KvBlockTable: TableClass }).KvBlockTable]);
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

/** One build's figures, measured in this process: ns per lookup by size (each round), the longest add() in ms. */
interface BuildFigures {
  lookups: Record<number, number[]>;
  longestAddMs: number;
}

function measure(Cls: TableClass): BuildFigures {
  const lookups: Record<number, number[]> = {};
  for (const size of SIZES) {
    const prompts = promptsFor(size);
    const table = new Cls();
    for (let i = 1; i <= size; i++) table.add(BigInt(i));
    lookups[size] = [];
    for (let round = 0; round < ROUNDS + 1; round++) {
      const ns = lookupNs(table, prompts);
      if (round > 0) lookups[size].push(Math.round(ns));
    }
  }
  const table = new Cls();
  let longestAddMs = 0;
  for (let i = 1; i <= Math.max(...SIZES); i++) {
    const t = performance.now();
    table.add(BigInt(i));
    longestAddMs = Math.max(longestAddMs, performance.now() - t);
  }
  return { lookups, longestAddMs };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];

function main(): void {
  const classes = builds();
  const only = args.get('build');
  if (only !== undefined) {
    const found = classes.find(([name]) => name === only);
    if (!found) throw new Error(`no build ${only}`);
    process.stdout.write(JSON.stringify(measure(found[1]())));
    return;
  }
  const runs = new Map<string, BuildFigures[]>(classes.map(([name]) => [name, []]));
  for (let run = 0; run < RUNS; run++) {
    // Alternating which goes first, so neither always runs on a warmer machine.
    for (const [name] of run % 2 ? [...classes].reverse() : classes) {
      const out = execFileSync(process.execPath, [__filename, ...process.argv.slice(2), `--build=${name}`], { encoding: 'utf8', maxBuffer: 1 << 20 });
      runs.get(name)!.push(JSON.parse(out) as BuildFigures);
    }
  }
  console.log(`| blocks | build | ns per lookup (each process' median of ${ROUNDS} rounds) |\n|---|---|---|`);
  for (const size of SIZES) {
    for (const [name, figures] of runs) console.log(`| ${size} | ${name} | ${figures.map((f) => median(f.lookups[size])).join(', ')} |`);
  }
  console.log(`\n| build | longest add() ms growing to ${Math.max(...SIZES)} blocks (each process) |\n|---|---|`);
  for (const [name, figures] of runs) console.log(`| ${name} | ${figures.map((f) => f.longestAddMs.toFixed(1)).join(', ')} |`);
}

main();
