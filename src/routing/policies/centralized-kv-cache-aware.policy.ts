import { Logger, Optional } from '@nestjs/common';
import { z } from 'zod';
import { BlockHashCache, cacheSaltIdOf, TokensPerBlock, V1_BLOCK_KEY_ALGO, type BlockKey } from '../../kv-cache';
import { KvReportEndpoints, RANK_ROUTING_ALGOS, selectWorker, type KvReportEndpoint, type SelectionParams } from '../../kv-events-zmq';
import type { ServerState } from '../../servers';
import { PromptTokenizer } from '../../tokenizer';
import { workerIdOf } from '../../worker-client';
import { BaseRouter } from '../base-router';
import type { GetNextServerOptions, RouteResult, RoutingRequest } from '../router.interface';
import { RoutingPolicy } from '../routing-policy.decorator';
import { tokenizerArgs } from './policy-args';

export const centralizedKvCacheAwareArgs = z.strictObject({
  /** Port of the ZMQ PULL endpoint the workers push to (0: a free port, shown in the admin view). */
  router_port: z.number().int().min(0).max(65535).default(5557),
  /** Address the endpoint binds (this router's own key; TensorRT-LLM binds every interface). */
  router_host: z.string().min(1).default('0.0.0.0'),
  /** Must equal the workers' kv_cache_config.tokens_per_block; unset: the workers' /server_info, else 32. */
  tokens_per_block: z.number().int().positive().optional(),
  ...tokenizerArgs,
  /** Score = matched blocks - load_weight * (active + queued requests the worker reported). */
  load_weight: z.number().nonnegative().default(0.25),
  /** How a rank of the chosen instance is picked: like instances, like the workers' ADP router, or not at all. */
  rank_routing_algo: z.enum(RANK_ROUTING_ALGOS).default('instance'),
  /** adp: ranks loaded above this many times the mean are left out. */
  fair_share_multiplier: z.number().positive().default(2.0),
  /** adp: a best match covering at most this share of the request counts as none. */
  match_rate_threshold: z.number().min(0).max(1).default(0.1),
  /** A worker whose last load report is older than this is not chosen (its blocks are kept). */
  load_suspend_s: z.number().positive().default(100),
  /** A worker with no report of any kind for this long is forgotten. */
  stale_timeout_s: z.number().positive().default(30),
});
export type CentralizedKvCacheAwareArgs = z.output<typeof centralizedKvCacheAwareArgs>;

/** TensorRT-LLM's router checks for stale workers every 5 s. */
const EVICT_EVERY_MS = 5000;

/**
 * TensorRT-LLM's CentralizedKvCacheAwareRouter (see docs/protocol.md "Centralized KV router"):
 * workers push their KV cache events and load over ZMQ to this router's endpoint instead of
 * being polled; a request goes to the instance (and data-parallel rank) with the best
 * `matched_blocks - load_weight * load`, the rank written into the body as
 * `disaggregated_params.route_hint.dp_rank`. Workers are matched to servers by the
 * `worker_id` of their /server_info. When no pushing worker qualifies, servers take turns.
 */
@RoutingPolicy('centralized_kv_cache_aware', centralizedKvCacheAwareArgs)
export class CentralizedKvCacheAwareRouter extends BaseRouter<CentralizedKvCacheAwareArgs> {
  private readonly logger = new Logger(CentralizedKvCacheAwareRouter.name);
  private readonly hashCache: BlockHashCache;
  private readonly warned = new Set<string>();
  private tokenizer!: PromptTokenizer;
  private blockSize!: TokensPerBlock;
  private endpoint?: KvReportEndpoint;
  private timer?: NodeJS.Timeout;
  private turn = 0;
  /** Picks that found no pushing worker for the request (servers took turns). */
  fallbacks = 0;

  constructor(
    private readonly endpoints: KvReportEndpoints,
    @Optional() hashCache?: BlockHashCache,
  ) {
    super();
    this.hashCache = hashCache ?? new BlockHashCache();
  }

  /** `ctx` or `gen`: the namespace this pool's workers report under. */
  get namespace(): string {
    return this.role === 'context' ? 'ctx' : 'gen';
  }

  protected override onInit(): void {
    this.tokenizer = new PromptTokenizer(this.args);
    this.blockSize = new TokensPerBlock(this.args.tokens_per_block);
  }

  override async start(): Promise<void> {
    this.endpoint = await this.endpoints.acquire(this.args.router_host, this.args.router_port);
    const every = Math.min(EVICT_EVERY_MS, (this.args.stale_timeout_s * 1000) / 4);
    this.timer = setInterval(() => this.endpoint?.evictStale(this.namespace, this.args.stale_timeout_s), every);
    this.timer.unref();
  }

  get tokensPerBlock(): number {
    return this.blockSize.resolve(this.servers);
  }

  async getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult> {
    this.candidates(options);
    const prompt = await this.tokenizer.tokenize(request);
    const candidates = this.candidates(options);
    const tpb = this.tokensPerBlock;
    const chains = this.hashCache.chains(prompt.lists, tpb, V1_BLOCK_KEY_ALGO, cacheSaltIdOf(request.body)) ?? [];
    const hashes: BlockKey[] = chains.length === 1 ? chains[0] : chains.flat();
    const byWorker = new Map<string, ServerState>();
    for (const s of candidates) {
      const id = workerIdOf(s.serverInfo);
      if (id !== undefined) byWorker.set(id, s);
    }
    const selection = this.endpoint ? selectWorker(this.endpoint.state, this.namespace, hashes, this.params(tpb), (id) => byWorker.has(id)) : undefined;
    let promptTokens = 0;
    for (const list of prompt.lists) promptTokens += list.length;
    const server = selection ? byWorker.get(selection.workerId)! : candidates[this.turn % candidates.length];
    this.turn++;
    if (!selection) this.fallbacks++;
    const matchedBlocks = selection?.matchedBlocks ?? 0;
    return this.reserve(request, server, 0, {
      matchedTokens: Math.min(matchedBlocks * tpb, promptTokens),
      promptTokens,
      tokenIds: prompt.tokenIds,
      untokenized: prompt.untokenized,
      ...(selection?.dpRank !== undefined ? { routeHint: { dp_rank: selection.dpRank } } : {}),
      matched_blocks: matchedBlocks,
      token_lists: prompt.lists,
      server_info: server.serverInfo ?? {},
    });
  }

  private params(tpb: number): SelectionParams {
    const a = this.args;
    return {
      tokensPerBlock: tpb,
      loadWeight: a.load_weight,
      rankRoutingAlgo: a.rank_routing_algo,
      fairShareMultiplier: a.fair_share_multiplier,
      matchRateThreshold: a.match_rate_threshold,
      loadSuspendS: a.load_suspend_s,
    };
  }

  protected override onServerAdded(server: ServerState): void {
    if (workerIdOf(server.serverInfo) !== undefined || this.warned.has(server.url)) return;
    this.warned.add(server.url);
    this.logger.warn(`${server.url} announces no worker_id in /server_info: its pushed KV reports cannot be matched to it, it is only chosen in turns`);
  }

  /** A server that left the pool is forgotten with its routing state, as TensorRT-LLM does. */
  protected override onServerRemoved(server: ServerState): void {
    const id = workerIdOf(server.serverInfo);
    if (id !== undefined) this.endpoint?.state.forget(id);
  }

  protected override extraSnapshot(): Record<string, unknown> {
    return {
      router_endpoint: this.endpoint?.address ?? null,
      signed_reports: this.endpoint?.signed ?? false,
      namespace: this.namespace,
      tokens_per_block: this.tokensPerBlock,
      fallbacks: this.fallbacks,
      workers: this.endpoint?.state.describe(this.namespace) ?? {},
    };
  }

  override async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const endpoint = this.endpoint;
    this.endpoint = undefined;
    await endpoint?.release();
    await this.tokenizer?.close();
  }
}
