import { parseKvEventsFast, serializeKvEvents } from '../../../src/kv-cache';
import { eventMessages } from '../../../src/replicas/event-messages';
import { partBytesFor } from '../../../src/replicas/snapshot-parts';
import { drainOf, timed } from './drain-timing';

/**
 * Publishing one large drain to the replica bus: the drain serialised in one go (what the
 * stream did before it cut drains into slices) against the messages it sends now (slices of
 * 20,000 blocks, each cut to NATS' default max_payload), with the longest gap between turns
 * of the event loop during each.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/routing/kv-drain-publish.js [--blocks=1100000,2000000]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const SIZES = (args.get('blocks') ?? '1100000,2000000').split(',').map(Number);

async function main(): Promise<void> {
  console.log('| blocks | serialise | ms | messages | event-loop turns | longest gap ms |\n|---|---|---|---|---|---|');
  for (const blocks of SIZES) {
    const events = parseKvEventsFast(drainOf(blocks));
    let messages = 0;
    const rows: Array<[string, () => unknown]> = [
      ['one go (serializeKvEvents)', () => (messages = serializeKvEvents(events).length > 0 ? 1 : 0)],
      [
        'sliced (eventMessages)',
        async () => {
          messages = 0;
          for await (const _text of eventMessages(events, partBytesFor(undefined))) messages++;
        },
      ],
    ];
    for (const [name, work] of rows) {
      const r = await timed(work);
      console.log(`| ${blocks} | ${name} | ${r.ms} | ${messages} | ${r.turns} | ${r.maxGapMs} |`);
    }
  }
}

void main();
