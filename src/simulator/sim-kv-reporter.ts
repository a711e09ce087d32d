import { Push } from 'zeromq';
import { encodeEventReportFrame, encodeLoadReportFrame } from '../kv-events-zmq/report-frame';
import type { KvCacheEvent } from '../kv-cache/kv-events';
import type { SimKvReportOptions } from './sim-options';
import type { SimState } from './sim-state';

/**
 * The worker side of the centralized KV router, as TensorRT-LLM's WorkerReporter pushes (see
 * docs/protocol.md "Centralized KV router"): one PUSH socket; per data-parallel rank
 * (`<worker_id>:rank<N>`) an event stream (a full snapshot first, then the new events) and a
 * load stream (requests in flight on the rank), each with its own `seq`.
 */
export class SimKvReporter {
  private readonly socket = new Push({ linger: 0, sendHighWaterMark: 10_000 });
  private readonly eventSeq: number[];
  private readonly loadSeq: number[];
  private eventTimer?: NodeJS.Timeout;
  private loadTimer?: NodeJS.Timeout;
  private sending: Promise<void> = Promise.resolve();
  /** Frames pushed, for tests and stats. */
  sent = 0;
  private stopped = false;

  constructor(private readonly state: SimState, private readonly opts: SimKvReportOptions) {
    this.eventSeq = state.kvRanks.map(() => 0);
    this.loadSeq = state.kvRanks.map(() => 0);
  }

  get namespace(): string {
    return this.opts.namespace ?? (this.state.role === 'context' ? 'ctx' : 'gen');
  }

  start(): void {
    this.socket.connect(this.opts.address);
    for (let rank = 0; rank < this.state.kvRanks.length; rank++) this.pushEvents(rank, true);
    this.pushLoads();
    this.eventTimer = setInterval(() => {
      for (let rank = 0; rank < this.state.kvRanks.length; rank++) this.pushEvents(rank, false);
    }, this.opts.eventIntervalMs ?? 10);
    this.loadTimer = setInterval(() => this.pushLoads(), this.opts.loadIntervalMs ?? 500);
  }

  private workerId(rank: number): string {
    const id = this.state.options.workerId;
    return this.opts.perRank === false ? id : `${id}:rank${rank}`;
  }

  private pushEvents(rank: number, snapshot: boolean): void {
    const events: KvCacheEvent[] = this.state.kvRanks[rank].drainEvents();
    if (!events.length && !snapshot) return;
    this.send(encodeEventReportFrame({
      workerId: this.workerId(rank), namespace: this.namespace, seq: this.eventSeq[rank]++,
      events, isFullSnapshot: snapshot, sendTs: Date.now() / 1000,
    }, this.opts.hmacKey));
  }

  private pushLoads(): void {
    const state = this.state;
    const ranks = this.opts.perRank === false ? [state.rankInFlight.reduce((a, b) => a + b, 0)] : state.rankInFlight;
    ranks.forEach((active, rank) => {
      this.send(encodeLoadReportFrame({
        workerId: this.workerId(rank), namespace: this.namespace, seq: this.loadSeq[rank]++,
        numActiveRequests: active, numQueuedRequests: 0, maxBatchSize: state.latency.maxBatchSize || 1, numActiveTokens: 0,
      }, this.opts.hmacKey));
    });
  }

  /** Frames go out in order, one send at a time (a zeromq socket takes one send at a time). */
  private send(frame: Buffer): void {
    this.sending = this.sending.then(async () => {
      if (this.stopped) return;
      await this.socket.send(frame);
      this.sent++;
    }).catch(() => undefined);
  }

  /** Stops pushing (the worker looks silent to the router); the HTTP side keeps serving. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.eventTimer);
    clearInterval(this.loadTimer);
    await this.sending;
    this.socket.close();
  }
}
