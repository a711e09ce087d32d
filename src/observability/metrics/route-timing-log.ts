import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { trtllmEnv } from '../../config';
import { RequestEvents, type RoutedEvent } from '../../request-events';

/** Picks per logged window, as TensorRT-LLM. */
export const ROUTE_TIMING_WINDOW = 500;

interface Window {
  picks: number;
  samplesMs: number[];
}

/**
 * TensorRT-LLM's TLLM_LOG_ROUTE_TIMING=1 (README "Coming from trtllm-serve"): every 500 picks of
 * one pool's router, a line with the mean, p50, p90, p99 and max time of the window's picks and
 * the router's pick count so far. The same times are always in disagg_router_routing_decision_seconds.
 */
@Injectable()
export class RouteTimingLog implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('RouteTiming');
  private readonly windows = new Map<string, Window>();
  private readonly onRouted = (e: RoutedEvent): void => this.record(`${e.policy} (${e.role})`, e.routingSeconds * 1000);

  constructor(private readonly events: RequestEvents) {}

  onModuleInit(): void {
    if (trtllmEnv().logRouteTiming) this.events.on('routed', this.onRouted);
  }

  onModuleDestroy(): void {
    this.events.off('routed', this.onRouted);
  }

  private record(router: string, ms: number): void {
    let w = this.windows.get(router);
    if (!w) this.windows.set(router, (w = { picks: 0, samplesMs: [] }));
    w.picks++;
    w.samplesMs.push(ms);
    if (w.picks % ROUTE_TIMING_WINDOW !== 0) return;
    const s = w.samplesMs.sort((a, b) => a - b);
    w.samplesMs = [];
    const at = (q: number): number => s[Math.min(Math.floor(q * s.length), s.length - 1)];
    const times = { mean: s.reduce((a, b) => a + b, 0) / s.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: s[s.length - 1] };
    const text = Object.entries(times).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ');
    // An object, so the line keeps TensorRT-LLM's `[route_timing]` lead (a text would read it as a request id).
    this.logger.log({ msg: `[route_timing] ${router} n=${w.picks} get_next_server_ms: ${text}`, router, picks: w.picks, ms: times });
  }
}
