import { Inject, Injectable, Logger, Optional, type OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config';
import { AnswerTooLargeError, HttpSessionClosedError } from '../http-session';
import { DEFAULT_KV_EVENTS_BYTES, WorkerClient } from '../worker-client';
import { KvEventApplier } from './kv-event-applier';
import { kvEventSlices } from './kv-event-slices';
import type { KvCacheEvent } from './kv-events';
import { parseKvEventsInSlices } from './sliced-kv-events';
import {
  KV_EVENT_PUBLISHER,
  KV_METRICS,
  KV_POLL_OWNERSHIP,
  POLL_EVERY_WORKER,
  PUBLISH_NOWHERE,
  type KvEventPublisher,
  type KvMetrics,
  type KvPollOwnership,
} from './kv-seams';

interface PollState {
  running: Promise<void>;
  /** Another poll was asked for while one was running: run once more after it. */
  again: boolean;
}

/**
 * Finishes within this long of a poll's start share the next poll (README "KV block tables"):
 * at thousands of requests a second a poll per finish is about an HTTP call per request and
 * pool, for drains that are mostly empty (the bench's kv-ablation table: 15-37% more CPU per
 * request on 2k-id prompts).
 */
export const DEFAULT_MIN_POLL_GAP_MS = 10;
/** The largest gap a policy accepts (kv_events_min_poll_gap_s's bound). */
export const MAX_MIN_POLL_GAP_MS = 60_000;
/** Workers whose last poll start is kept before stale ones are swept. */
const MAX_REMEMBERED_STARTS = 1024;

export interface PollOutcome {
  ok: boolean;
  /** Events that changed the block tables. */
  applied?: number;
  error?: string;
}

/**
 * Drains the KV cache events of the workers this router owns (a destructive read) and hands
 * them to the applier, then to the publisher. Polls of one worker never overlap: two answers
 * applied out of order could re-add a block the later one removed. A poll asked for while one
 * runs is coalesced into a single follow-up. Never throws: a failed poll leaves the tables as
 * they were and counts in `kv_poll_errors_total`.
 */
@Injectable()
export class KvEventPoller implements OnModuleDestroy {
  private readonly logger = new Logger(KvEventPoller.name);
  /** Per worker URL, shared by every router (a runtime policy switch may overlap two). */
  private readonly polls = new Map<string, PollState>();
  private readonly maxDrainBytes: number;
  /** Waits between a poll and its follow-up, ended early when the app closes. */
  private readonly gaps = new Map<NodeJS.Timeout, () => void>();
  /** performance.now() at the start of each worker's last poll (the gap counts from it). */
  private readonly lastStarts = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly workers: WorkerClient,
    private readonly applier: KvEventApplier,
    @Optional() @Inject(KV_POLL_OWNERSHIP) private readonly ownership: KvPollOwnership = POLL_EVERY_WORKER,
    @Optional() @Inject(KV_EVENT_PUBLISHER) private readonly publisher: KvEventPublisher = PUBLISH_NOWHERE,
    @Optional() @Inject(KV_METRICS) private readonly metrics?: KvMetrics,
    @Optional() @Inject(APP_CONFIG) config?: AppConfig,
  ) {
    this.maxDrainBytes = config?.limits.max_kv_events_bytes ?? DEFAULT_KV_EVENTS_BYTES;
  }

  /**
   * Polls the worker at `serverUrl` unless another replica owns it; resolves when done. No poll
   * of a worker starts sooner than `minGapMs` after its previous one started: asked while a
   * poll runs, or after it ended but within the gap, one poll is run once the gap is over, for
   * every ask in between. A burst of finishes, or a steady stream of them each landing after
   * the last drain came back, costs one drain per gap; a worker polled longer ago than the gap
   * is polled at once.
   */
  poll(serverUrl: string, timeoutMs: number, minGapMs = DEFAULT_MIN_POLL_GAP_MS): Promise<void> {
    const current = this.polls.get(serverUrl);
    if (current) {
      current.again = true;
      return current.running;
    }
    if (this.closed || !this.ownership.owns(serverUrl)) return Promise.resolve();
    const state = { again: false } as PollState;
    state.running = (async () => {
      try {
        // Asks during this wait are answered by the poll after it (`again` is reset before it).
        const wait = this.gap((this.lastStarts.get(serverUrl) ?? -Infinity) + minGapMs - performance.now());
        if (wait) {
          await wait;
          if (this.closed || !this.ownership.owns(serverUrl)) return;
        }
        do {
          state.again = false;
          const started = performance.now();
          this.noteStart(serverUrl, started);
          await this.pollOnce(serverUrl, timeoutMs);
          if (state.again) await this.gap(started + minGapMs - performance.now());
        } while (state.again && !this.closed);
      } finally {
        this.polls.delete(serverUrl);
      }
    })();
    this.polls.set(serverUrl, state);
    return state.running;
  }

  /** When each worker's last poll started; entries older than any gap are dropped as it grows (workers come and go). */
  private noteStart(serverUrl: string, at: number): void {
    if (this.lastStarts.size >= MAX_REMEMBERED_STARTS && !this.lastStarts.has(serverUrl)) {
      for (const [url, started] of this.lastStarts) if (at - started > MAX_MIN_POLL_GAP_MS) this.lastStarts.delete(url);
    }
    this.lastStarts.set(serverUrl, at);
  }

  /** Ends the waits between polls: nothing is polled once the app closes. */
  onModuleDestroy(): void {
    this.closed = true;
    for (const [timer, done] of this.gaps) {
      clearTimeout(timer);
      done();
    }
    this.gaps.clear();
  }

  private gap(ms: number): Promise<void> | undefined {
    if (ms <= 0 || this.closed) return undefined;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.gaps.delete(timer);
        resolve();
      }, ms);
      this.gaps.set(timer, resolve);
    });
  }

  /** Whether a poll of this worker is in flight. */
  isPolling(serverUrl: string): boolean {
    return this.polls.has(serverUrl);
  }

  /** One drain-and-apply; resolves with what happened. */
  async pollOnce(serverUrl: string, timeoutMs: number): Promise<PollOutcome> {
    let events;
    this.metrics?.kvPoll?.(serverUrl);
    try {
      const answer = await this.workers.openKvEvents(serverUrl, timeoutMs, this.maxDrainBytes);
      // A large drain is parsed in slices as it arrives, yielding to requests (README "KV block tables").
      events = await parseKvEventsInSlices(answer);
      if (!events.length) return { ok: true, applied: 0 };
    } catch (err) {
      if (err instanceof AnswerTooLargeError) return this.lostDrain(serverUrl, err);
      // Outside the session's lifetime there is nothing to poll with, and a poll the app's
      // shutdown cut off (the session aborts in-flight calls after this room closed): not a worker fault.
      if (!(err instanceof HttpSessionClosedError) && !this.closed) {
        this.metrics?.kvPollError(serverUrl);
        this.logger.warn(`failed to poll KV cache events from ${serverUrl}: ${(err as Error).message}`);
      }
      return { ok: false, error: (err as Error).message };
    }
    // A drain never repeats an event: ids at or below the applied ones mean the worker restarted.
    const first = events[0]?.event_id;
    const last = this.applier.lastEventId(serverUrl);
    const restarted = first !== undefined && first >= 0 && last !== undefined && first <= last;
    if (restarted) this.applier.restart(serverUrl);
    const applied = await this.applyInSlices(serverUrl, events);
    try {
      if (events.length) this.publisher.publish(serverUrl, events, restarted);
    } catch (err) {
      this.logger.warn(`failed to publish the KV cache events of ${serverUrl}: ${(err as Error).message}`);
    }
    return { ok: true, applied };
  }

  /** Applies a drain; a large one in slices, yielding to the event loop between them. */
  private async applyInSlices(serverUrl: string, events: readonly KvCacheEvent[]): Promise<number> {
    let applied = 0;
    let first = true;
    for (const slice of kvEventSlices(events)) {
      if (!first) await new Promise((resolve) => setImmediate(resolve));
      first = false;
      applied += this.applier.apply(serverUrl, slice);
    }
    return applied;
  }

  /**
   * A drain over limits.max_kv_events_bytes was not read, and a drain is destructive: its
   * events are lost. The worker's tables are emptied (here and, through the publisher, on
   * every replica alike) and fill again from its next events, instead of routing on a view
   * that no longer matches the worker.
   */
  private lostDrain(serverUrl: string, err: AnswerTooLargeError): PollOutcome {
    this.metrics?.kvPollError(serverUrl);
    this.logger.warn(`the KV cache events of ${serverUrl} exceeded limits.max_kv_events_bytes (${err.limitBytes} bytes) and were dropped: its KV view starts empty again`);
    const reset: KvCacheEvent[] = [{ event_id: -1, data: { type: 'created' } }];
    this.applier.apply(serverUrl, reset);
    try {
      this.publisher.publish(serverUrl, reset, false);
    } catch (publishErr) {
      this.logger.warn(`failed to publish the KV reset of ${serverUrl}: ${(publishErr as Error).message}`);
    }
    return { ok: false, error: err.message };
  }
}
