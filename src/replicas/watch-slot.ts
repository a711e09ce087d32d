import type { ReplicaBus } from './replica-bus.service';

/** What a KV watch or a stream consumer gives back: entries until stopped. */
export interface StoppableIterator<E> extends AsyncIterable<E> {
  stop(): void;
}

/**
 * At most one live watch (or stream reader) for its owner. Opening one stops the previous one,
 * even one still being opened (the bus can be slow to answer), and `stop()` also stops one that
 * opens later: two of them reading the same keys would apply every entry twice.
 */
export class WatchSlot {
  private generation = 0;
  private current?: StoppableIterator<unknown>;

  constructor(private readonly bus: ReplicaBus) {}

  /** Opens the iterator through the bus; undefined (and stopped) when the slot moved on meanwhile. */
  async open<I extends StoppableIterator<unknown>>(open: () => Promise<I>): Promise<I | undefined> {
    this.stop();
    const generation = this.generation;
    const iterator = await this.bus.call(open);
    if (generation !== this.generation) {
      iterator.stop();
      return undefined;
    }
    this.current = iterator;
    return iterator;
  }

  /** Opens the watch and hands every entry to `onEntry` until it stops. */
  async follow<E>(open: () => Promise<StoppableIterator<E>>, onEntry: (entry: E) => unknown): Promise<void> {
    const iterator = await this.open(open);
    if (!iterator) return;
    for await (const entry of iterator) await onEntry(entry);
  }

  stop(): void {
    this.generation++;
    this.current?.stop();
    this.current = undefined;
  }
}
