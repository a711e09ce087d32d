import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { ServerRole } from '../../config';
import { RequestEvents, type RequestDoneEvent, type UpstreamFailureEvent } from '../../request-events';

/** Time to first token (ms) a failed call counts as, so a server failing fast does not look fast. */
export const FAILURE_PENALTY_MS = 10_000;

/**
 * Moving averages of each server's time to first answer, learnt from the request flow's
 * events: the context call's duration for context servers, the time to the first byte of
 * the generation answer for generation servers.
 */
@Injectable()
export class LatencyTracker implements OnModuleInit, OnModuleDestroy {
  private readonly ewma = new Map<string, number>();
  /** Weight of the newest sample. */
  alpha = 0.3;

  constructor(private readonly events: RequestEvents) {}

  private readonly onDone = (e: RequestDoneEvent): void => {
    const t = e.timings;
    if (e.contextServer && t.contextStart !== undefined && t.contextEnd !== undefined) {
      this.record('context', e.contextServer, t.contextEnd - t.contextStart);
    }
    if (e.generationServer && e.status < 400 && t.generationStart !== undefined && t.firstByte !== undefined) {
      this.record('generation', e.generationServer, t.firstByte - t.generationStart);
    }
  };

  private readonly onFailure = (e: UpstreamFailureEvent): void => {
    this.record(e.role, e.server.url, FAILURE_PENALTY_MS);
  };

  onModuleInit(): void {
    this.events.on('requestDone', this.onDone);
    this.events.on('upstreamFailure', this.onFailure);
  }

  onModuleDestroy(): void {
    this.events.off('requestDone', this.onDone);
    this.events.off('upstreamFailure', this.onFailure);
  }

  record(role: ServerRole, url: string, ms: number): void {
    const key = `${role} ${url}`;
    const prev = this.ewma.get(key);
    this.ewma.set(key, prev === undefined ? ms : prev + this.alpha * (ms - prev));
  }

  /** The server's average, or undefined before its first sample. */
  estimate(role: ServerRole, url: string): number | undefined {
    return this.ewma.get(`${role} ${url}`);
  }
}
