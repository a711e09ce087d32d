import { Inject, Injectable, OnModuleDestroy, Optional } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, type ServerRole } from '../config';
import { MetricsService } from '../observability/metrics/metrics.service';
import { SlotQueue, SlotRejectedError } from './slot-queue';
import { ClientGoneError, HttpApiError } from '../common';

/** Holds an admission slot; release() is idempotent. */
export interface AdmissionTicket {
  release(): void;
}

const NO_TICKET: AdmissionTicket = { release: () => undefined };

/**
 * Admission control: a limit of in-flight client requests (limits.max_in_flight) and of
 * concurrent upstream calls per pool (limits.max_in_flight_per_pool), each with a bounded wait
 * queue (limits.queue_size) and a queue deadline (limits.queue_timeout_ms). Beyond that the
 * client gets 429 with Retry-After. With every limit at 0 nothing is counted at all.
 */
@Injectable()
export class AdmissionService implements OnModuleDestroy {
  private readonly global?: SlotQueue;
  private readonly pools: Partial<Record<ServerRole, SlotQueue>> = {};
  /** Seconds a rejected client is told to wait. */
  private readonly retryAfter: string;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() private readonly metrics?: MetricsService,
  ) {
    const l = config.limits;
    if (l.max_in_flight > 0) this.global = new SlotQueue(l.max_in_flight, l.queue_size, l.queue_timeout_ms);
    for (const role of ['context', 'generation'] as const) {
      const limit = l.max_in_flight_per_pool[role];
      if (limit > 0) this.pools[role] = new SlotQueue(limit, l.queue_size, l.queue_timeout_ms);
    }
    this.retryAfter = String(Math.max(1, Math.ceil(l.queue_timeout_ms / 1000)));
  }

  get limited(): boolean {
    return this.global !== undefined;
  }

  /** A free slot of the global in-flight limit, without waiting (undefined when all are taken). */
  tryAdmit(): AdmissionTicket | undefined {
    const queue = this.global;
    if (!queue) return NO_TICKET;
    return queue.tryAcquire() ? once(() => queue.release()) : undefined;
  }

  /** A slot of the global in-flight limit; waits in the queue when all are taken. */
  async admit(signal?: AbortSignal): Promise<AdmissionTicket> {
    const queue = this.global;
    if (!queue) return NO_TICKET;
    if (!queue.tryAcquire()) await this.wait(queue, 'router', 'router', signal);
    return once(() => queue.release());
  }

  poolLimited(role: ServerRole): boolean {
    return this.pools[role] !== undefined;
  }

  /** A slot for one upstream call on a pool; pair with leavePool(role). */
  async enterPool(role: ServerRole, signal?: AbortSignal): Promise<void> {
    const queue = this.pools[role];
    if (!queue || queue.tryAcquire()) return;
    await this.wait(queue, role, `${role} pool`, signal);
  }

  leavePool(role: ServerRole): void {
    this.pools[role]?.release();
  }

  /** In-flight and queued counts, for metrics and tests. */
  snapshot(): Record<string, { in_flight: number; queued: number; limit: number }> {
    const out: Record<string, { in_flight: number; queued: number; limit: number }> = {};
    if (this.global) out.router = view(this.global);
    for (const [role, q] of Object.entries(this.pools)) out[role] = view(q);
    return out;
  }

  onModuleDestroy(): void {
    this.global?.close();
    for (const q of Object.values(this.pools)) q.close();
  }

  /** The slow path only: metrics are touched when a request has to wait, never on a free slot. */
  private async wait(queue: SlotQueue, name: string, what: string, signal?: AbortSignal): Promise<void> {
    const waiting = queue.acquire(signal);
    this.metrics?.setQueueLength(queue.waiting, name);
    try {
      await waiting;
    } catch (err) {
      if (!(err instanceof SlotRejectedError)) throw err;
      if (err.reason !== 'aborted') this.metrics?.admissionRejected(err.reason, name);
      if (err.reason === 'aborted') throw new ClientGoneError();
      if (err.reason === 'closed') {
        throw new HttpApiError(503, 'the router is shutting down', { code: 'shutting_down', headers: { 'retry-after': '1' } });
      }
      const message =
        err.reason === 'queue_full'
          ? `the ${what} is at its limit of ${queue.limit} requests in flight and its queue of ${queue.queueSize} is full`
          : `no ${what} slot was free within ${queue.queueTimeoutMs} ms`;
      throw new HttpApiError(429, message, { code: err.reason, headers: { 'retry-after': this.retryAfter } });
    } finally {
      this.metrics?.setQueueLength(queue.waiting, name);
    }
  }
}

function once(fn: () => void): AdmissionTicket {
  let done = false;
  return {
    release: () => {
      if (done) return;
      done = true;
      fn();
    },
  };
}

function view(q: SlotQueue): { in_flight: number; queued: number; limit: number } {
  return { in_flight: q.inUse, queued: q.waiting, limit: q.limit };
}
