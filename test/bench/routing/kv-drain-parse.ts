import { parseKvEventsFast, parseKvEventsInSlices } from '../../../src/kv-cache';

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

function drainOf(blocks: number): string {
  const parts = ['[{"event_id":1,"data":{"type":"stored","parent_hash":null,"blocks":['];
  for (let i = 1; i <= blocks; i++) parts.push(`${i > 1 ? ',' : ''}{"type":"stored_block","block_hash":${i},"tokens":[]}`);
  parts.push(']},"window_size":32}]');
  return parts.join('');
}

/** Runs `parse` with a turn counter beside it: total ms, turns seen, longest gap ms. */
async function timed(parse: () => unknown): Promise<{ ms: number; turns: number; maxGapMs: number }> {
  let turns = 0;
  let maxGapMs = 0;
  let running = true;
  const started = performance.now();
  let last = started;
  const tick = (): void => {
    if (!running) return;
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  await parse();
  running = false;
  const ms = performance.now() - started;
  return { ms: Math.round(ms), turns, maxGapMs: Math.round(Math.max(maxGapMs, performance.now() - last)) };
}

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
