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
    return epoch;
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
}

/** Whether (epoch, last event id) `a` is ahead of `b` (an undefined id is before every id). */
export function isAhead(a: { epoch: number; lastEventId?: number }, b: { epoch: number; lastEventId?: number }): boolean {
  if (a.epoch !== b.epoch) return a.epoch > b.epoch;
  if (a.lastEventId === undefined) return false;
  return b.lastEventId === undefined || a.lastEventId > b.lastEventId;
}
