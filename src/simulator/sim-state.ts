import type * as http from 'node:http';
import { getTokenizer, type TextTokenizer } from '../tokenizer';
import type { CtxRegistry } from './ctx-registry';
import { FaultInjector } from './faults';
import { BatchSlots, type LatencyOptions, resolveLatency } from './latency-model';
import { RequestScope } from './request-scope';
import { SimCounters } from './sim-counters';
import { SimKvCache } from './sim-kv-cache';
import { type ResolvedSimOptions, resolveSimOptions, type SimRole, type SimWorkerOptions } from './sim-options';
import { SimPerfMetrics } from './sim-perf-metrics';
import { TextGenerator } from './text-generator';

/** One text generator per tokenizer, shared by the workers of a process. */
const generators = new Map<string, TextGenerator>();

/** What a worker's request handling and its control API share. */
export class SimState {
  readonly options: ResolvedSimOptions;
  readonly role: SimRole;
  readonly registry: CtxRegistry | undefined;
  /** Rank 0's cache: the whole worker's when it has one rank. */
  readonly kv: SimKvCache;
  /** One KV cache per data-parallel rank. */
  readonly kvRanks: SimKvCache[];
  /** Requests in flight per rank (the load a KV reporter pushes). */
  readonly rankInFlight: number[];
  private nextRank = 0;
  readonly faults = new FaultInjector();
  readonly perf = new SimPerfMetrics();
  readonly counters: SimCounters;
  readonly slots: BatchSlots;
  /** Requests answered asynchronously, finished when the worker closes. */
  readonly scopes = new Set<RequestScope>();
  latency: LatencyOptions;
  healthy = true;
  inFlight = 0;
  port = 0;
  url = '';
  private tokenizerRef: TextTokenizer | undefined;
  private generatorRef: TextGenerator | undefined;

  constructor(opts: SimWorkerOptions) {
    this.options = resolveSimOptions(opts);
    this.role = this.options.role;
    this.registry = this.options.registry;
    this.latency = resolveLatency(opts.latency);
    this.slots = new BatchSlots(this.latency.maxBatchSize);
    this.counters = new SimCounters(this.options.keepReceived);
    this.kvRanks = Array.from({ length: this.options.dpRanks }, () => new SimKvCache({
      capacityBlocks: this.options.kvBlocks,
      tokensPerBlock: this.options.tokensPerBlock,
      hashAlgo: this.options.kvHashAlgo,
      windowSize: this.options.windowSize,
      maxBufferedEvents: this.options.maxBufferedEvents,
    }));
    this.kv = this.kvRanks[0];
    this.rankInFlight = this.kvRanks.map(() => 0);
    if (opts.faults) this.faults.set(opts.faults);
  }

  /** The rank a request runs on: its `route_hint.dp_rank` when valid, else the next in turn. */
  rankFor(routeHint: unknown): number {
    const rank = (routeHint as { dp_rank?: unknown } | null | undefined)?.dp_rank;
    if (typeof rank === 'number' && Number.isInteger(rank) && rank >= 0 && rank < this.kvRanks.length) return rank;
    return this.nextRank++ % this.kvRanks.length;
  }

  get tokenizer(): TextTokenizer {
    return (this.tokenizerRef ??= getTokenizer(this.options.tokenizer));
  }

  generator(): TextGenerator {
    if (this.generatorRef) return this.generatorRef;
    const name = this.options.tokenizer;
    let gen = generators.get(name);
    if (!gen) {
      gen = new TextGenerator(this.tokenizer);
      generators.set(name, gen);
    }
    return (this.generatorRef = gen);
  }

  /** The timers and batch slot of a request answered later, released when its client leaves. */
  openScope(res: http.ServerResponse): RequestScope {
    const scope = new RequestScope(this.slots, (s) => this.scopes.delete(s));
    this.scopes.add(scope);
    res.once('close', () => scope.finish());
    return scope;
  }
}
