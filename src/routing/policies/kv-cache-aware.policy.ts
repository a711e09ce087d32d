import { Logger } from '@nestjs/common';
import { z } from 'zod';
import type { BlockKey, ServerState } from '../../servers';
import { BaseRouter } from '../base-router';
import { blockHashesFor, paddedTokens } from '../kv/block-hashes';
import { isPolling, pollKvEvents } from '../kv/kv-event-poller';
import { PromptTokenizer } from '../kv/prompt-tokenizer';
import type { GetNextServerOptions, RouteResult, RoutingRequest } from '../router.interface';
import { RoutingPolicy } from '../routing-policy.decorator';
import { LeastLoadedPicker } from './least-loaded';
import { tokenizerArgs } from './policy-args';

export const kvCacheAwareArgs = z.strictObject({
  /** Also count prompt tokens in flight per server (the score itself uses requests in flight). */
  use_tokens: z.boolean().default(false),
  /** Requests in flight that cancel a full prefix match in the score. */
  max_batch_size: z.number().int().positive().default(64),
  /** Must equal the workers' kv_cache_config.tokens_per_block for hashes to match. */
  tokens_per_block: z.number().int().positive().default(32),
  ...tokenizerArgs,
  /** Record the routed prompt's blocks as cached on success (for workers that publish no events). */
  backfill_block_hashes_on_finish: z.boolean().default(false),
  /** Also poll every server's KV events on this period, off the request path (0: only on finish). */
  kv_events_poll_interval_s: z.number().nonnegative().default(0),
  kv_events_timeout_s: z.number().positive().default(5),
});
export type KvCacheAwareArgs = z.output<typeof kvCacheAwareArgs>;

interface Backfill {
  hashes: BlockKey[][];
  algo: string;
}

/**
 * TensorRT-LLM's KvCacheAwareRouter. Each server scores
 * `matched_tokens / padded_prompt_tokens - active_requests / max_batch_size`, where matched
 * tokens are the leading prompt blocks found in the block table built from that server's KV
 * cache events; the highest score wins, ties go round robin. Finishing a request releases its
 * load and then polls that server's `/kv_cache_events` through the shared session.
 */
@RoutingPolicy('kv_cache_aware', kvCacheAwareArgs)
export class KvCacheAwareRouter extends BaseRouter<KvCacheAwareArgs> {
  private readonly logger = new Logger(KvCacheAwareRouter.name);
  private readonly picker = new LeastLoadedPicker();
  private readonly backfills = new Map<string, Backfill>();
  private readonly warnedAlgos = new Set<string>();
  private tokenizer!: PromptTokenizer;
  private timer?: NodeJS.Timeout;

  protected override onInit(): void {
    this.tokenizer = new PromptTokenizer(this.args);
    const every = this.args.kv_events_poll_interval_s * 1000;
    if (every > 0) {
      this.timer = setInterval(() => this.pollAll(), every);
      this.timer.unref();
    }
  }

  async getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult> {
    this.candidates(options);
    const tokenLists = await this.tokenizer.tokenLists(request);
    // Candidates again: servers may have come or gone while tokenizing.
    const candidates = this.candidates(options);
    const tpb = this.args.tokens_per_block;
    const byAlgo = new Map<string, BlockKey[][] | undefined>();
    const matches: number[] = [];
    const scores: number[] = [];
    for (const server of candidates) {
      const algo = server.kvHashAlgo;
      if (!byAlgo.has(algo)) byAlgo.set(algo, blockHashesFor(tokenLists, tpb, algo));
      const hashes = byAlgo.get(algo);
      if (!hashes) this.warnAlgo(server, algo);
      const matched = hashes ? this.matchedTokens(server, hashes, algo) : 0;
      matches.push(matched);
      scores.push(matched / paddedTokens(hashes ?? [], tpb) - server.activeRequests / this.args.max_batch_size);
    }
    const best = Math.max(...scores);
    const winner = this.picker.tieBreak(scores.flatMap((s, i) => (s === best ? [i] : [])));
    const server = candidates[winner];
    const algo = server.kvHashAlgo;
    const hashes = byAlgo.get(algo) ?? [];
    let promptTokens = 0;
    for (const list of tokenLists) promptTokens += list.length;
    if (this.args.backfill_block_hashes_on_finish) this.backfills.set(request.id, { hashes, algo });
    return this.reserve(request, server, this.args.use_tokens ? promptTokens : 0, {
      matchedTokens: matches[winner],
      promptTokens,
      matches,
      block_hashes: hashes,
      hash_algo: algo,
      token_lists: tokenLists,
      server_info: server.serverInfo ?? {},
    });
  }

  /** Leading blocks of each prompt present in the server's table, in tokens. */
  private matchedTokens(server: ServerState, hashes: readonly BlockKey[][], algo: string): number {
    const table = server.kvTables.get(algo);
    if (!table) return 0;
    let blocks = 0;
    for (const list of hashes) blocks += table.matchPrefix(list);
    return blocks * this.args.tokens_per_block;
  }

  protected override async afterFinish(request: RoutingRequest, server: ServerState, success: boolean): Promise<void> {
    const backfill = this.backfills.get(request.id);
    this.backfills.delete(request.id);
    // A server that left the pool keeps no table worth updating.
    if (!this.servers.includes(server)) return;
    if (backfill && success) {
      const table = server.kvTable(backfill.algo);
      for (const list of backfill.hashes) for (const h of list) table.add(h);
    }
    await pollKvEvents(server, this.args.kv_events_timeout_s * 1000);
  }

  private pollAll(): void {
    for (const server of this.servers) {
      if (!isPolling(server)) void pollKvEvents(server, this.args.kv_events_timeout_s * 1000);
    }
  }

  private warnAlgo(server: ServerState, algo: string): void {
    const key = `${server.id}:${algo}`;
    if (this.warnedAlgos.has(key)) return;
    this.warnedAlgos.add(key);
    this.logger.warn(`${server.url} hashes KV blocks with '${algo}', which this router cannot compute; it gets no prefix matches`);
  }

  protected override extraSnapshot(): Record<string, unknown> {
    return {
      tokens_per_block: this.args.tokens_per_block,
      kv_tables: Object.fromEntries(
        this.servers.map((s) => [
          s.id,
          Object.fromEntries([...s.kvTables].map(([algo, t]) => [algo, { blocks: t.size, capacity: t.capacity ?? null, events_applied: t.eventsApplied, last_event_id: t.lastEventId ?? null }])),
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
