import { setImmediate as nextTurn } from 'node:timers/promises';
import { blocksOf, kvEventSlices, serializeKvEvents, type KvCacheEvent } from '../kv-cache';

/** Blocks serialised between two turns of the event loop: a few milliseconds of JSON work. */
const BLOCKS_PER_TURN = 20_000;

/**
 * A drain as bus messages of at most `limit` bytes each, serialised a slice at a time with a
 * turn of the event loop between slices, so publishing a huge drain does not stall requests.
 * An event too large for one message is cut into parts that replicas apply as that one event
 * (the parts but the last carry event_id -1; README "Replicas": "Large drains on the bus").
 */
export async function* eventMessages(events: readonly KvCacheEvent[], limit: number): AsyncGenerator<string> {
  // Bytes per block of the messages so far: later slices are cut to size before their one serialisation.
  const seen = { bytes: 0, blocks: 0 };
  let first = true;
  for (const slice of kvEventSlices(events, BLOCKS_PER_TURN)) {
    if (!first) await nextTurn();
    first = false;
    const stripped = slice.map(withoutTokens);
    const groups = seen.blocks ? kvEventSlices(stripped, (limit * 0.9 * seen.blocks) / seen.bytes) : [stripped];
    for (const group of groups) yield* fitted(group, limit, seen);
  }
}

/** The events as one JSON text, or cut into several when the text exceeds `limit` bytes. */
function fitted(events: KvCacheEvent[], limit: number, seen: { bytes: number; blocks: number }): string[] {
  const text = serializeKvEvents(events);
  const bytes = Buffer.byteLength(text);
  const weight = events.reduce((n, e) => n + blocksOf(e), 0);
  seen.bytes += bytes;
  seen.blocks += weight;
  // A lone event of one block cannot be cut: it goes as it is (no real block is that large).
  if (bytes <= limit || weight < 2) return [text];
  // Groups of the blocks that fit with a margin: each is smaller than this text, so the cut ends.
  return [...kvEventSlices(events, (weight * limit * 0.9) / bytes)].flatMap((group) => fitted(group, limit, seen));
}

/**
 * A stored event without its blocks' token lists: block tables need only the hashes, and the
 * tokens are most of a stored event's bytes (every replica parses every message).
 */
function withoutTokens(event: KvCacheEvent): KvCacheEvent {
  const data = event.data;
  if (data.type !== 'stored' || !Array.isArray(data.blocks)) return event;
  const blocks = data.blocks.map(({ tokens: _tokens, ...rest }) => rest);
  return { ...event, data: { ...data, blocks } } as KvCacheEvent;
}
