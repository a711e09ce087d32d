import { parseKvEventsFast, parseKvEventsInSlices } from '../../../src/kv-cache';
import { drainOf, timed } from './drain-timing';

/**
 * The parse of one large /kv_cache_events drain (a single stored event of `blocks` blocks, the
 * shape of the hostile bench's drain): the one-go fast parse against the sliced parse the
 * poller uses, each timed whole, with the longest gap between turns of the event loop seen
 * during it (a setImmediate chain; the one-go parse allows none, so its gap is its time).
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/routing/kv-drain-parse.js [--blocks=1100000,2000000]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const SIZES = (args.get('blocks') ?? '1100000,2000000').split(',').map(Number);

async function main(): Promise<void> {
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
