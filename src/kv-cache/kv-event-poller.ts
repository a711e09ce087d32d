import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { HttpSessionClosedError } from '../http-session';
import { WorkerClient } from '../worker-client';
import { parseKvEventsFast } from './fast-kv-events';
import { KvEventApplier } from './kv-event-applier';
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
export class KvEventPoller {
  private readonly logger = new Logger(KvEventPoller.name);
  /** Per worker URL, shared by every router (a runtime policy switch may overlap two). */
  private readonly polls = new Map<string, PollState>();

  constructor(
    private readonly workers: WorkerClient,
    private readonly applier: KvEventApplier,
    @Optional() @Inject(KV_POLL_OWNERSHIP) private readonly ownership: KvPollOwnership = POLL_EVERY_WORKER,
    @Optional() @Inject(KV_EVENT_PUBLISHER) private readonly publisher: KvEventPublisher = PUBLISH_NOWHERE,
    @Optional() @Inject(KV_METRICS) private readonly metrics?: KvMetrics,
  ) {}

  /** Polls the worker at `serverUrl` unless another replica owns it; resolves when done. */
  poll(serverUrl: string, timeoutMs: number): Promise<void> {
    const current = this.polls.get(serverUrl);
    if (current) {
      current.again = true;
      return current.running;
    }
    if (!this.ownership.owns(serverUrl)) return Promise.resolve();
    const state = { again: false } as PollState;
    state.running = (async () => {
      try {
        do {
          state.again = false;
          await this.pollOnce(serverUrl, timeoutMs);
        } while (state.again);
      } finally {
        this.polls.delete(serverUrl);
      }
    })();
    this.polls.set(serverUrl, state);
    return state.running;
  }

  /** Whether a poll of this worker is in flight. */
  isPolling(serverUrl: string): boolean {
    return this.polls.has(serverUrl);
  }

  /** One drain-and-apply; resolves with what happened. */
  async pollOnce(serverUrl: string, timeoutMs: number): Promise<PollOutcome> {
    let events;
    try {
      const text = await this.workers.drainKvEvents(serverUrl, timeoutMs);
      if (!text.trim()) return { ok: true, applied: 0 };
      events = parseKvEventsFast(text);
    } catch (err) {
      // Outside the session's lifetime there is nothing to poll with; not a worker fault.
      if (!(err instanceof HttpSessionClosedError)) {
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
    const applied = this.applier.apply(serverUrl, events);
    try {
      if (events.length) this.publisher.publish(serverUrl, events, restarted);
    } catch (err) {
      this.logger.warn(`failed to publish the KV cache events of ${serverUrl}: ${(err as Error).message}`);
    }
    return { ok: true, applied };
  }
}
