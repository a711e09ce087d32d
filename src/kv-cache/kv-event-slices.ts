import type { KvCacheEvent } from './kv-events';

/** The parts of a cut event but its last: applied, not counted again as events. */
const CONTINUATIONS = new WeakSet<KvCacheEvent>();

export function isContinuation(event: KvCacheEvent): boolean {
  return CONTINUATIONS.has(event);
}

/** Blocks applied between two turns of the event loop: a few milliseconds of table work. */
export const BLOCKS_PER_SLICE = 20_000;

/**
 * A drain's events cut into slices of about BLOCKS_PER_SLICE blocks, so applying a huge drain
 * yields to the event loop between slices instead of stalling every request. An event larger
 * than a slice is cut too: its parts but the last carry event_id -1 (untracked; applying a
 * block twice changes nothing), the last its own id, so the id bookkeeping sees it once.
 */
export function* kvEventSlices(events: readonly KvCacheEvent[], blocksPerSlice = BLOCKS_PER_SLICE): Generator<KvCacheEvent[]> {
  let slice: KvCacheEvent[] = [];
  let weight = 0;
  for (const event of events) {
    for (const part of partsOf(event, blocksPerSlice)) {
      slice.push(part);
      weight += blocksOf(part);
      if (weight >= blocksPerSlice) {
        yield slice;
        slice = [];
        weight = 0;
      }
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

function partsOf(event: KvCacheEvent, blocksPerPart: number): KvCacheEvent[] {
  const data = event.data;
  if (blocksOf(event) <= blocksPerPart) return [event];
  const parts: KvCacheEvent[] = [];
  if (data.type === 'stored') {
    for (let i = 0; i < data.blocks.length; i += blocksPerPart) {
      parts.push({ ...event, data: { ...data, blocks: data.blocks.slice(i, i + blocksPerPart) } });
    }
  } else if (data.type === 'removed') {
    for (let i = 0; i < data.block_hashes.length; i += blocksPerPart) {
      parts.push({ ...event, data: { ...data, block_hashes: data.block_hashes.slice(i, i + blocksPerPart) } });
    }
  }
  for (let i = 0; i < parts.length - 1; i++) {
    parts[i].event_id = -1;
    CONTINUATIONS.add(parts[i]);
  }
  return parts;
}
