import { Injectable } from '@nestjs/common';
import type { KvWorker } from './kv-worker';

/** The workers known under one URL (a URL may serve both pools) and the events applied to them. */
export interface KvWorkerEntry {
  readonly workers: KvWorker[];
  /** The highest event_id applied for this URL, whatever source delivered it. */
  lastEventId?: number;
}

/**
 * URL -> the workers whose block tables that worker's KV cache events feed. Server states are
 * attached when created and detached when removed, so events that arrive by URL (a poll, or
 * another router replica) reach the same tables, and a removed worker's watermark goes with it.
 */
@Injectable()
export class KvWorkers {
  private readonly byUrl = new Map<string, KvWorkerEntry>();

  attach(worker: KvWorker): void {
    const entry = this.byUrl.get(worker.url);
    if (!entry) this.byUrl.set(worker.url, { workers: [worker] });
    else if (!entry.workers.includes(worker)) entry.workers.push(worker);
  }

  detach(worker: KvWorker): void {
    const entry = this.byUrl.get(worker.url);
    if (!entry) return;
    const i = entry.workers.indexOf(worker);
    if (i >= 0) entry.workers.splice(i, 1);
    if (entry.workers.length === 0) this.byUrl.delete(worker.url);
  }

  get(url: string): KvWorkerEntry | undefined {
    return this.byUrl.get(url);
  }

  get size(): number {
    return this.byUrl.size;
  }
}
