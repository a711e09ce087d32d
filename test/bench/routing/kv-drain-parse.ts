import { parseKvEventsFast, parseKvEventsInSlices } from '../../../src/kv-cache';
import { median } from '../lib/report';
import { drainOf, promptDrainOf, timed } from './drain-timing';

/**
 * The parse of one large /kv_cache_events drain (a single stored event of `blocks` blocks, the
 * shape of the hostile bench's drain): the one-go fast parse against the sliced parse the
 * poller uses, each timed whole, with the longest gap between turns of the event loop seen
 * during it (a setImmediate chain; the one-go parse allows none, so its gap is its time).
 *
 * Then the drain a worker answers after one long prompt (per-token objects, 32 tokens a block):
 * the fast parse, which empties the token lists in the text before the native parser runs,
 * against the native JSON.parse of the same text (the least any parser does; it also rounds
 * the 64-bit hashes), median of `--repeat` parses each.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/routing/kv-drain-parse.js [--blocks=1100000,2000000] [--prompts=2048,9216] [--repeat=50]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const SIZES = (args.get('blocks') ?? '1100000,2000000').split(',').map(Number);
const PROMPTS = (args.get('prompts') ?? '2048,9216').split(',').map(Number);
const REPEAT = Number(args.get('repeat') ?? 50);

function medianMs(work: () => unknown): number {
  const times: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const started = performance.now();
    work();
    times.push(performance.now() - started);
  }
  return median(times);
}

function promptDrains(): void {
  console.log('\n| prompt tokens | KB | JSON.parse ms | parseKvEventsFast ms | ratio |\n|---|---|---|---|---|');
  for (const tokens of PROMPTS) {
    const text = promptDrainOf(tokens, 32);
    const native = medianMs(() => JSON.parse(text));
    const fast = medianMs(() => parseKvEventsFast(text));
    console.log(`| ${tokens} | ${Math.round(text.length / 1024)} | ${native.toFixed(2)} | ${fast.toFixed(2)} | ${(fast / native).toFixed(2)}x |`);
  }
}

async function main(): Promise<void> {
  promptDrains();
  console.log('| blocks | MB | parse | ms | event-loop turns | longest gap ms |\n|---|---|---|---|---|---|');
  for (const blocks of SIZES) {
    const text = drainOf(blocks);
    const rows: Array<[string, () => unknown]> = [
      ['one go (parseKvEventsFast)', () => parseKvEventsFast(text)],
      ['sliced (parseKvEventsInSlices)', () => parseKvEventsInSlices(text)],
    ];
    for (const [name, parse] of rows) {
      const r = await timed(parse);
      console.log(`| ${blocks} | ${(text.length / 1e6).toFixed(1)} | ${name} | ${r.ms} | ${r.turns} | ${r.maxGapMs} |`);
    }
  }
}

void main();
