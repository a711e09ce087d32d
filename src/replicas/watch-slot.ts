import { BusRetry } from './bus-retry';
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
  /** Bumped by every follow() and stop(): an older follow loop ends at its next turn. */
  private following = 0;
  private readonly retry: BusRetry;

  constructor(
    private readonly bus: ReplicaBus,
    what: string,
  ) {
    this.retry = new BusRetry(bus, what);
  }

  /** Opens the iterator through the bus; undefined (and stopped) when the slot moved on meanwhile. */
  async open<I extends StoppableIterator<unknown>>(open: () => Promise<I>): Promise<I | undefined> {
    this.close();
    const generation = this.generation;
    const iterator = await this.bus.call(open);
    if (generation !== this.generation) {
      iterator.stop();
      return undefined;
    }
    this.current = iterator;
    return iterator;
  }

  /**
   * Opens the watch and hands every entry to `onEntry` until stopped. While the bus is up, a
   * watch that could not be opened (the bus stalled right after a reconnection) or that ended
   * unasked is opened again after a pause (BusRetry); while it is down, the owner opens it
   * again on the bus's next 'up'. Never throws.
   */
  async follow<E>(open: () => Promise<StoppableIterator<E>>, onEntry: (entry: E) => unknown): Promise<void> {
    const mine = ++this.following;
    this.retry.cancel();
    await this.retry.untilDone(
      async () => {
        const iterator = await this.open(open);
        for await (const entry of iterator ?? []) {
          this.retry.succeeded();
          await onEntry(entry);
        }
        // Stopped, superseded or cut off by the bus going down: untilDone's goOn says which.
        throw new Error('the watch ended');
      },
      () => mine === this.following && this.bus.connected,
    );
  }

  stop(): void {
    this.following++;
    this.retry.cancel();
    this.close();
  }

  private close(): void {
    this.generation++;
    this.current?.stop();
    this.current = undefined;
  }
}
