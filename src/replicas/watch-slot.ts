import type { ReplicaBus } from './replica-bus.service';

/** What a KV watch gives back: entries until stopped. */
export interface StoppableIterator<E> extends AsyncIterable<E> {
  stop(): void;
}

/**
 * At most one live watch for its owner. Opening one stops the previous one, even a watch still
 * being opened (the bus can be slow to answer), and `stop()` also stops one that opens later:
 * two watches reading the same keys would apply every entry twice.
 */
export class WatchSlot {
  private generation = 0;
  private current?: StoppableIterator<unknown>;

  constructor(private readonly bus: ReplicaBus) {}

  /** Opens the watch through the bus and hands every entry to `onEntry` until it stops. */
  async follow<E>(open: () => Promise<StoppableIterator<E>>, onEntry: (entry: E) => unknown): Promise<void> {
    this.stop();
    const generation = this.generation;
    const iterator = await this.bus.call(open);
    if (generation !== this.generation) {
      iterator.stop();
      return;
    }
    this.current = iterator;
    for await (const entry of iterator) await onEntry(entry);
  }

  stop(): void {
    this.generation++;
    this.current?.stop();
    this.current = undefined;
  }
}
