import { Inject, Logger, Optional } from '@nestjs/common';
import { z } from 'zod';
import { trtllmEnv } from '../../config';
import { BlockHashCache, blockKeyScope, cacheSaltIdOf, DEFAULT_MIN_POLL_GAP_MS, KvEventPoller, MAX_MIN_POLL_GAP_MS, paddedTokens, TokensPerBlock, workerTokensPerBlock, type BlockKey } from '../../kv-cache';
import type { ServerState } from '../../servers';
import { PromptTokenizer } from '../../tokenizer';
import { BaseRouter } from '../base-router';
import type { BlockChains, GetNextServerOptions, RouteResult, RoutingKeyConfig, RoutingRequest, TokenIds } from '../router.interface';
import { ROUTED_BLOCKS_SINK, type RoutedBlocksSink } from '../routed-blocks-sink';
import { RoutingPolicy } from '../routing-policy.decorator';
import { conversationKeyOf, ConversationPins } from './conversation-pins';
import { LeastLoadedPicker } from './least-loaded';
import { tokenizerArgs } from './policy-args';

export const kvCacheAwareArgs = z.strictObject({
  /** Also count prompt tokens in flight per server (the score itself uses requests in flight). */
  use_tokens: z.boolean().default(false),
  /** Requests in flight that cancel a full prefix match in the score; also the load_cap unit. */
  max_batch_size: z.number().int().positive().default(64),
  /** Must equal the workers' kv_cache_config.tokens_per_block; unset: the workers' /server_info, else 32. */
  tokens_per_block: z.number().int().positive().optional(),
  ...tokenizerArgs,
  /** Record the routed prompt's blocks on its server when it succeeds, confirmed later by events. */
  track_routed_blocks: z.boolean().default(true),
  /** Recorded blocks no event confirmed are forgotten after this long. */
  routed_blocks_ttl_s: z.number().positive().default(60),
  /** score `blocks`: matched blocks - load_weight * requests in flight (TensorRT-LLM's default 0.25). */
  load_weight: z.number().nonnegative().default(0.25),
  /**
   * `blocks`: TensorRT-LLM's score since its router took load_weight; `ratio`: the score of the
   * releases before, matched / padded prompt tokens - requests in flight / max_batch_size.
   */
  score: z.enum(['blocks', 'ratio']).default('blocks'),
  /** A chat's later turns go to the server its conversation was routed to while it is under load_cap (TensorRT-LLM since 39ff08ab). */
  conversation_affinity: z.boolean().default(true),
  /** Servers with requests in flight / max_batch_size at or above this are skipped (unless all are). */
  load_cap: z.number().positive().optional(),
  /** Record the routed prompt's blocks as cached for good (for workers that publish no events). */
  backfill_block_hashes_on_finish: z.boolean().default(false),
  /** Also poll every server's KV events on this period, off the request path (0: only on finish). */
  kv_events_poll_interval_s: z.number().nonnegative().default(0),
  kv_events_timeout_s: z.number().positive().default(5),
  /** Finishes within this long of a server's last poll start share its next one (0: the follow-up at once, as TensorRT-LLM 39ff08ab). */
  kv_events_min_poll_gap_s: z.number().nonnegative().max(MAX_MIN_POLL_GAP_MS / 1000).default(DEFAULT_MIN_POLL_GAP_MS / 1000),
});
export type KvCacheAwareArgs = z.output<typeof kvCacheAwareArgs>;

interface Routed {
  hashes: BlockKey[][];
  algo: string;
}

/**
 * TensorRT-LLM's KvCacheAwareRouter (docs/protocol.md "KV-aware scoring"). Each server scores
 * `matched_blocks - load_weight * active_requests` (with `score: ratio`, as releases before
 * load_weight: `matched_tokens / padded_prompt_tokens - active_requests / max_batch_size`),
 * where matched blocks are the leading prompt blocks found in that server's block table;
 * servers over `load_cap` are skipped; a chat whose conversation was routed before goes to that
 * server again while it is still eligible; else the highest score wins, ties round robin. The
 * table holds what the server's KV cache events say plus, with `track_routed_blocks`, the
 * blocks of prompts it just answered, recorded synchronously when the request finishes so the
 * very next request can follow them. Finishing a request then polls that server's `/kv_cache_events` (the KV room's poller).
 */
@RoutingPolicy('kv_cache_aware', kvCacheAwareArgs)
export class KvCacheAwareRouter extends BaseRouter<KvCacheAwareArgs> {
  private readonly logger = new Logger(KvCacheAwareRouter.name);
  private readonly picker = new LeastLoadedPicker();
  private readonly routed = new Map<string, Routed>();
  private readonly pins = new ConversationPins();
  private readonly warned = new Set<string>();
  private tokenizer!: PromptTokenizer;
  private blockSize!: TokensPerBlock;
  private timer?: NodeJS.Timeout;

  private readonly hashCache: BlockHashCache;

  /** The app's shared block-hash cache; a router built alone gets one of its own. */
  constructor(
    private readonly kvEvents: KvEventPoller,
    @Optional() hashCache?: BlockHashCache,
    @Optional() @Inject(ROUTED_BLOCKS_SINK) private readonly sink?: RoutedBlocksSink,
  ) {
    super();
    this.hashCache = hashCache ?? new BlockHashCache();
  }

  protected override onInit(): void {
    this.tokenizer = new PromptTokenizer(this.args);
    // TensorRT-LLM's env switch wins over the config and the workers' announced size.
    this.blockSize = new TokensPerBlock(trtllmEnv().hashTokensPerBlock ?? this.args.tokens_per_block);
    const every = this.args.kv_events_poll_interval_s * 1000;
    if (every > 0) {
      this.timer = setInterval(() => this.pollAll(), every);
      this.timer.unref();
    }
  }

  /** The block size hashes are computed with (configured, or adopted from the workers). */
  get tokensPerBlock(): number {
    return this.blockSize.resolve(this.servers);
  }

  /**
   * As TensorRT-LLM's /cluster_info reports it: the block size and the one hash algorithm of
   * the ready servers; undefined while none is ready or when they disagree (logged once).
   */
  routingKeyConfig(): RoutingKeyConfig | undefined {
    const algos = new Set(this.servers.map((s) => s.kvHashAlgo));
    if (algos.size > 1) this.warnOnce('routing-key-algos', `the ${this.role} servers hash KV blocks with different algorithms (${[...algos].sort().join(', ')}): no routing key config to report`);
    if (algos.size !== 1) return undefined;
    return { tokens_per_block: this.tokensPerBlock, kv_cache_hash_algo: [...algos][0] };
  }

  async getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult> {
    this.candidates(options);
    const prompt = await this.tokenizer.tokenize(request);
    const tokenLists = prompt.lists;
    // Candidates again: servers may have come or gone while tokenizing.
    const candidates = this.candidates(options);
    const tpb = this.tokensPerBlock;
    const saltId = cacheSaltIdOf(request.body);
    const byAlgo = new Map<string, BlockKey[][] | undefined>();
    const matches: number[] = [];
    const scores: number[] = [];
    const now = performance.now();
    for (const server of candidates) {
      const algo = server.kvHashAlgo;
      if (!byAlgo.has(algo)) byAlgo.set(algo, earlierChains(request.blockChains, blockKeyScope(algo, tpb, saltId), tokenLists) ?? this.hashCache.chains(tokenLists, tpb, algo, saltId));
      const hashes = byAlgo.get(algo);
      if (!hashes) this.warnOnce(`${server.id}:${algo}`, `${server.url} hashes KV blocks with '${algo}', which this router cannot compute; it gets no prefix matches`);
      const matched = hashes ? this.matchedBlocks(server, hashes, algo, now) * tpb : 0;
      matches.push(matched);
      scores.push(this.score(server, matched, hashes ?? [], tpb));
    }
    const eligible = this.underLoadCap(candidates);
    const conversation = this.args.conversation_affinity ? conversationKeyOf(request.body, tokenLists.length === 1 ? tokenLists[0] : undefined) : undefined;
    const winner = this.pinnedIndex(conversation, candidates, eligible) ?? this.bestIndex(eligible, scores);
    const server = candidates[winner];
    if (conversation !== undefined) this.pins.pin(conversation, server.id);
    const algo = server.kvHashAlgo;
    const chains = byAlgo.get(algo);
    const hashes = chains ?? [];
    let promptTokens = 0;
    for (const list of tokenLists) promptTokens += list.length;
    if (this.args.track_routed_blocks || this.args.backfill_block_hashes_on_finish) this.routed.set(request.id, { hashes, algo });
    return this.reserve(request, server, this.args.use_tokens ? promptTokens : 0, {
      matchedTokens: matches[winner],
      promptTokens,
      tokenIds: prompt.tokenIds,
      untokenized: prompt.untokenized,
      matches,
      block_hashes: hashes,
      hash_algo: algo,
      blockChains: chains ? { scope: blockKeyScope(algo, tpb, saltId), lists: tokenLists, chains } : undefined,
      token_lists: tokenLists,
      server_info: server.serverInfo ?? {},
    });
  }

  private score(server: ServerState, matchedTokens: number, hashes: readonly BlockKey[][], tpb: number): number {
    const load = server.clusterActiveRequests;
    if (this.args.score === 'ratio') return matchedTokens / paddedTokens(hashes, tpb) - load / this.args.max_batch_size;
    return matchedTokens / tpb - this.args.load_weight * load;
  }

  /** The conversation's server when it is still eligible; the tie-break counter advances as on any pick. */
  private pinnedIndex(conversation: string | undefined, candidates: readonly ServerState[], eligible: readonly number[]): number | undefined {
    const id = conversation === undefined ? undefined : this.pins.serverOf(conversation);
    if (id === undefined) return undefined;
    const at = candidates.findIndex((s) => s.id === id);
    if (at < 0 || !eligible.includes(at)) return undefined;
    this.picker.advance();
    return at;
  }

  /** The highest score among the eligible, ties round robin. */
  private bestIndex(eligible: readonly number[], scores: readonly number[]): number {
    let best = -Infinity;
    for (const i of eligible) if (scores[i] > best) best = scores[i];
    return this.picker.tieBreak(eligible.filter((i) => scores[i] === best));
  }

  /** Indices of the candidates under load_cap; all of them when none is (or no cap is set). */
  private underLoadCap(candidates: readonly ServerState[]): number[] {
    const all = candidates.map((_, i) => i);
    const cap = this.args.load_cap;
    if (cap === undefined) return all;
    const under = all.filter((i) => candidates[i].clusterActiveRequests / this.args.max_batch_size < cap);
    return under.length ? under : all;
  }

  /** Leading blocks of each prompt present in the server's table. */
  private matchedBlocks(server: ServerState, hashes: readonly BlockKey[][], algo: string, now: number): number {
    const table = server.kvTables.get(algo);
    if (!table) return 0;
    let blocks = 0;
    for (const list of hashes) blocks += table.matchPrefix(list, now);
    return blocks;
  }

  /** Not async: the poll's promise is returned as it is, so nothing waiting on it holds the request (see BaseRouter.finishRequest). */
  protected override afterFinish(request: RoutingRequest, server: ServerState, success: boolean): Promise<void> {
    const routed = this.routed.get(request.id);
    this.routed.delete(request.id);
    // A server that left the pool keeps no table worth updating.
    if (!this.servers.includes(server)) return Promise.resolve();
    // Synchronous, before the answer reaches the client: the next request already sees it.
    if (routed && success) {
      const table = server.kvTable(routed.algo);
      const ttlMs = this.args.routed_blocks_ttl_s * 1000;
      if (this.args.backfill_block_hashes_on_finish) {
        for (const list of routed.hashes) for (const h of list) table.add(h);
      } else {
        // Array.prototype.flat is slow: the usual single prompt goes as it is.
        for (const list of routed.hashes) table.track(list, ttlMs);
      }
      this.sink?.routed(server, routed.algo, !this.args.track_routed_blocks ? [] : routed.hashes.length === 1 ? routed.hashes[0] : routed.hashes.flat(), ttlMs);
    } else if (success) {
      this.sink?.routed(server, server.kvHashAlgo, [], 0);
    }
    if (!this.eventsAligned(server)) return Promise.resolve();
    return this.kvEvents.poll(server.url, this.args.kv_events_timeout_s * 1000, this.args.kv_events_min_poll_gap_s * 1000);
  }

  /** A worker whose block size differs from the router's publishes events no hash can match. */
  private eventsAligned(server: ServerState): boolean {
    const worker = workerTokensPerBlock(server);
    const tpb = this.tokensPerBlock;
    if (worker === undefined || worker === tpb) return true;
    this.warnOnce(`${server.id}:tpb`, `${server.url} has tokens_per_block ${worker}, the router ${tpb}: its KV events cannot match the router's block hashes; not polling them, relying on routed-block tracking`);
    return false;
  }

  private pollAll(): void {
    for (const server of this.servers) {
      if (!this.kvEvents.isPolling(server.url) && this.eventsAligned(server)) void this.kvEvents.poll(server.url, this.args.kv_events_timeout_s * 1000, this.args.kv_events_min_poll_gap_s * 1000);
    }
  }

  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.logger.warn(message);
  }

  protected override extraSnapshot(): Record<string, unknown> {
    return {
      tokens_per_block: this.tokensPerBlock,
      tokens_per_block_source: this.blockSize.source,
      score: this.args.score,
      conversation_pins: this.pins.size,
      kv_tables: Object.fromEntries(
        this.servers.map((s) => [
          s.id,
          Object.fromEntries([...s.kvTables].map(([algo, t]) => [algo, {
            blocks: t.size,
            tracked_blocks: t.trackedSize,
            capacity: t.capacity ?? null,
            events_applied: t.eventsApplied,
            last_event_id: t.lastEventId ?? null,
          }])),
        ]),
      ),
    };
  }

  override async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.tokenizer?.close();
  }
}

/** The other pool's chains for this request, when they were computed from these very lists in this scope. */
function earlierChains(earlier: BlockChains | undefined, scope: string, lists: readonly TokenIds[]): BlockKey[][] | undefined {
  if (!earlier || earlier.scope !== scope || earlier.lists.length !== lists.length) return undefined;
  for (let i = 0; i < lists.length; i++) if (earlier.lists[i] !== lists[i]) return undefined;
  return earlier.chains as BlockKey[][];
}
