import { Injectable } from '@nestjs/common';

/**
 * Where this replica stands with each worker's KV events, by worker URL. The epoch counts the
 * worker's restarts as the replicas saw them (a restarted worker numbers its events from the
 * start again, so an event id alone cannot say what is newer); the stream sequence is the
 * last event-stream message whose events this replica's tables hold.
 */
@Injectable()
export class WorkerPositions {
  private readonly epochs = new Map<string, number>();
  private readonly seqs = new Map<string, number>();
  /** Workers whose tables missed events read off the stream (see markGap). */
  private readonly gaps = new Set<string>();

  epoch(url: string): number {
    return this.epochs.get(url) ?? 0;
  }

  setEpoch(url: string, epoch: number): void {
    this.epochs.set(url, epoch);
  }

  /** The worker restarted (seen by this replica's own poll): a new epoch. */
  nextEpoch(url: string): number {
    const epoch = this.epoch(url) + 1;
    this.epochs.set(url, epoch);
    this.gaps.delete(url);
    return epoch;
  }

  /**
   * The worker's events on the stream skipped some (ids not consecutive, or a new epoch read
   * without its start): the missing ones were handed over by a snapshot only. Until a snapshot
   * at or ahead of this replica's position replaces its tables, they lack those blocks.
   * Returns whether the worker was whole until now.
   */
  markGap(url: string): boolean {
    if (this.gaps.has(url)) return false;
    this.gaps.add(url);
    return true;
  }

  hasGap(url: string): boolean {
    return this.gaps.has(url);
  }

  /** The worker's tables are whole again (a snapshot replaced them, or its epoch started here). */
  clearGap(url: string): void {
    this.gaps.delete(url);
  }

  streamSeq(url: string): number {
    return this.seqs.get(url) ?? 0;
  }

  setStreamSeq(url: string, seq: number): void {
    this.seqs.set(url, seq);
  }

  /** The stream was re-created (its sequences start from 1 again). */
  resetStreamSeqs(): void {
    this.seqs.clear();
  }

  /** Workers with a gap (admin view). */
  gapped(): string[] {
    return [...this.gaps];
  }
}

/** Whether (epoch, last event id) `a` is ahead of `b` (an undefined id is before every id). */
export function isAhead(a: { epoch: number; lastEventId?: number }, b: { epoch: number; lastEventId?: number }): boolean {
  if (a.epoch !== b.epoch) return a.epoch > b.epoch;
  if (a.lastEventId === undefined) return false;
  return b.lastEventId === undefined || a.lastEventId > b.lastEventId;
}
