import type { KvCacheEvent } from './kv-events';

/**
 * A part of a cut event but its last (event_id -1, cut here or by the replica that published
 * it; `continues` names the event): applied, not counted again as an event. Workers number
 * their events from 0.
 */
export function isContinuation(event: KvCacheEvent): boolean {
  return event.event_id < 0 && (event.data.type === 'stored' || event.data.type === 'removed');
}

/** Blocks applied between two turns of the event loop: a few milliseconds of table work. */
export const BLOCKS_PER_SLICE = 20_000;

/**
 * A drain's events cut into slices of at most `blocksPerSlice` blocks (an event without
 * blocks weighs one), so applying a huge drain yields to the event loop between slices
 * instead of stalling every request. An event that does not fit the room left in a slice is
 * cut: its parts but the last carry event_id -1 and `continues` (the event's id), the last its
 * own id, so the id bookkeeping sees it once and a part of an event applied already (a
 * snapshot taken after it was adopted meanwhile) is skipped instead of undoing later events.
 */
export function* kvEventSlices(events: readonly KvCacheEvent[], blocksPerSlice = BLOCKS_PER_SLICE): Generator<KvCacheEvent[]> {
  const size = Math.max(1, Math.floor(blocksPerSlice));
  let slice: KvCacheEvent[] = [];
  let room = size;
  for (const event of events) {
    const total = blocksOf(event);
    let from = 0;
    // Only an event with blocks can weigh more than the room (at least 1) left.
    while (total - from > room) {
      slice.push(partOf(event, from, from + room, true));
      from += room;
      yield slice;
      slice = [];
      room = size;
    }
    slice.push(from === 0 ? event : partOf(event, from, total, false));
    room -= total - from;
    if (room === 0) {
      yield slice;
      slice = [];
      room = size;
    }
  }
  if (slice.length) yield slice;
}

/** Blocks an event carries (1 for events without blocks): the weight slices are cut by. */
export function blocksOf(event: KvCacheEvent): number {
  const data = event.data;
  if (data.type === 'stored') return Math.max(1, data.blocks.length);
  if (data.type === 'removed') return Math.max(1, data.block_hashes.length);
  return 1;
}

/** Blocks [from, to) of a stored or removed event; a continuation carries event_id -1. */
function partOf(event: KvCacheEvent, from: number, to: number, continuation: boolean): KvCacheEvent {
  const data = event.data;
  const part: KvCacheEvent =
    data.type === 'stored'
      ? { ...event, data: { ...data, blocks: data.blocks.slice(from, to) } }
      : data.type === 'removed'
        ? { ...event, data: { ...data, block_hashes: data.block_hashes.slice(from, to) } }
        : { ...event };
  if (continuation) {
    if (event.event_id >= 0) part.continues = event.event_id;
    part.event_id = -1;
  }
  return part;
}
