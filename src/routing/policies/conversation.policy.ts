import { z } from 'zod';
import { LazyRecency } from '../../common/lazy-recency';
import { OldestFirst } from '../../common/oldest-first';
import { trtllmEnv } from '../../config';
import { blockHashChain, BlockHashTrie, type BlockKey } from '../../kv-cache';
import type { ServerState } from '../../servers';
import { codePoints, PromptTokenizer, requestText, tokenListsInBody, type PromptTokens } from '../../tokenizer';
import { BaseRouter } from '../base-router';
import { routingIdOf } from '../conversation-id';
import type { GetNextServerOptions, RouteResult, RoutingRequest } from '../router.interface';
import { RoutingPolicy } from '../routing-policy.decorator';
import { LeastLoadedPicker } from './least-loaded';
import { tokenizerArgs } from './policy-args';

export const conversationArgs = z.strictObject({
  /** Share of a request's blocks a known session must match to count as its continuation. */
  match_threshold: z.number().min(0).max(1).default(0.75),
  tokens_per_block: z.number().int().positive().default(128),
  /** Tokenize text prompts; otherwise hash Unicode code points (no tokenizer needed). */
  use_token_ids: z.boolean().default(false),
  /** Leading tokens (or code points / 5) left out of the hashes, e.g. a shared system prompt. */
  hash_skip_count: z.number().int().nonnegative().default(0),
  max_sessions: z.number().int().positive().default(100_000),
  /** Estimated bytes the session table (ids, block-hash chains, prefix trie) may hold; least recently used sessions go first. */
  max_table_bytes: z.number().int().positive().default(256 * 1024 * 1024),
  ...tokenizerArgs,
});
export type ConversationArgs = z.output<typeof conversationArgs>;

/** TensorRT-LLM's estimate of characters per token (about 4, plus a space). */
const CHARS_PER_TOKEN = 5;

interface Session {
  server: ServerState;
  hashes: BlockKey[];
  /** What the session costs the table (sessionBytes). */
  bytes: number;
  /** When it was last put at the back of the recency order (LazyRecency). */
  stamp: number;
}

/** Per session: the map entry, its object and array. */
const SESSION_BYTES = 160;
/** Per block of its chain: the key, its array slot and its share of a trie node (Map and Set entries). */
const BLOCK_BYTES = 240;

/** An estimate of a session's memory: ids are UTF-16, kept once in the map and once per trie node's set. */
function sessionBytes(conversationId: string, hashes: readonly BlockKey[]): number {
  return SESSION_BYTES + 2 * conversationId.length + hashes.length * BLOCK_BYTES;
}

type Match = 'sticky' | 'implicit' | 'fallback';

/**
 * TensorRT-LLM's ConversationRouter: session affinity for multi-turn conversations.
 * 1. A conversation id (body `conversation_params` or `disaggregated_params`, session
 *    headers, `prompt_cache_key`: see conversation-id.ts) known: its server (unless excluded or gone).
 * 2. No id: the session whose block-hash chain shares the longest prefix with this request,
 *    if that covers at least `match_threshold` of the request's blocks.
 * 3. Otherwise the server with the fewest estimated content tokens in flight (ties round
 *    robin), remembered under the given id or a generated one.
 * Sessions are kept LRU up to `max_sessions` and `max_table_bytes`; those of a removed server
 * are forgotten. Ids are at most MAX_CONVERSATION_ID_CHARS long (longer ones are digested).
 */
@RoutingPolicy('conversation', conversationArgs)
export class ConversationRouter extends BaseRouter<ConversationArgs> {
  private readonly picker = new LeastLoadedPicker();
  /** Insertion order is recency order (moved lazily: LazyRecency): the first entry is the least recently used. */
  private readonly sessions = new Map<string, Session>();
  private readonly recency = new LazyRecency();
  private readonly oldest = new OldestFirst(() => this.sessions.keys());
  private readonly trie = new BlockHashTrie();
  private readonly contentLoad = new Map<ServerState, number>();
  private readonly contentByRequest = new Map<string, { server: ServerState; weight: number }>();
  private implicitIds = 0;
  private tableBytes = 0;
  private tokenizer?: PromptTokenizer;

  /** The block size hashed with: TensorRT-LLM's env switch wins over the argument. */
  private tokensPerBlock = 0;

  protected override onInit(): void {
    this.tokensPerBlock = trtllmEnv().hashTokensPerBlock ?? this.args.tokens_per_block;
    if (this.args.use_token_ids) this.tokenizer = new PromptTokenizer(this.args);
  }

  async getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult> {
    this.candidates(options);
    const conversationId = routingIdOf(request, this.role);
    const { hashes, prompt } = await this.requestHashes(request);
    const weight = hashes.length * this.tokensPerBlock;
    const candidates = this.candidates(options);

    if (conversationId !== undefined) {
      const session = this.sessions.get(conversationId);
      if (session && candidates.includes(session.server)) {
        return this.assign(request, conversationId, session.server, hashes, weight, 'sticky', prompt);
      }
    } else {
      const found = this.trie.longestPrefixMatch(hashes, (id) => {
        const s = this.sessions.get(id);
        return s !== undefined && candidates.includes(s.server);
      });
      if (found.sessionId !== undefined && hashes.length > 0 && found.depth / hashes.length >= this.args.match_threshold) {
        const session = this.sessions.get(found.sessionId)!;
        return this.assign(request, found.sessionId, session.server, hashes, weight, 'implicit', prompt);
      }
    }
    const server = this.picker.pick(candidates, (s) => this.contentLoad.get(s) ?? 0);
    return this.assign(request, conversationId ?? `conv_id:0_${++this.implicitIds}`, server, hashes, weight, 'fallback', prompt);
  }

  private assign(
    request: RoutingRequest, conversationId: string, server: ServerState, hashes: BlockKey[], weight: number, match: Match, prompt: PromptTokens | undefined,
  ): RouteResult {
    this.remember(conversationId, server, hashes);
    this.releaseContent(request.id);
    this.contentLoad.set(server, (this.contentLoad.get(server) ?? 0) + weight);
    this.contentByRequest.set(request.id, { server, weight });
    return this.reserve(request, server, 0, {
      match, conversation_id: conversationId, tokenIds: prompt?.tokenIds, untokenized: prompt?.untokenized, server_info: server.serverInfo ?? {},
    });
  }

  /** Block hashes of the request: its token ids, else tokenized text, else code points. */
  private async requestHashes(request: RoutingRequest): Promise<{ hashes: BlockKey[]; prompt?: PromptTokens }> {
    let sequences = request.tokenIds ? [request.tokenIds] : tokenListsInBody(request.kind, request.body);
    let skip = this.args.hash_skip_count;
    let prompt: PromptTokens | undefined;
    if (!sequences) {
      if (this.tokenizer) {
        prompt = await this.tokenizer.tokenize(request);
        sequences = prompt.lists;
      } else {
        sequences = [codePoints(requestText(request.kind, request.body))];
        skip *= CHARS_PER_TOKEN;
      }
    }
    const first = sequences[0] ?? [];
    return { hashes: blockHashChain(skip > 0 ? first.slice(skip) : first, this.tokensPerBlock), prompt };
  }

  private remember(conversationId: string, server: ServerState, hashes: BlockKey[]): void {
    const old = this.sessions.get(conversationId);
    const bytes = sessionBytes(conversationId, hashes);
    // A session used again in the newer half keeps its place (set() on a key keeps its order).
    const stays = old !== undefined && !this.recency.due(old.stamp, this.sessions.size);
    if (old && stays) {
      this.tableBytes -= old.bytes;
      this.trie.remove(conversationId, old.hashes);
    } else if (old) {
      this.forget(conversationId);
    }
    this.sessions.set(conversationId, { server, hashes, bytes, stamp: stays ? old.stamp : this.recency.next() });
    this.tableBytes += bytes;
    this.trie.insert(conversationId, hashes);
    while (this.sessions.size > this.args.max_sessions || (this.tableBytes > this.args.max_table_bytes && this.sessions.size > 1)) {
      const oldest = this.oldest.take();
      if (oldest === undefined) break;
      this.forget(oldest);
    }
  }

  private forget(conversationId: string): void {
    const session = this.sessions.get(conversationId);
    if (!session) return;
    this.sessions.delete(conversationId);
    this.tableBytes -= session.bytes;
    this.trie.remove(conversationId, session.hashes);
  }

  private releaseContent(requestId: string): void {
    const entry = this.contentByRequest.get(requestId);
    if (!entry) return;
    this.contentByRequest.delete(requestId);
    const load = this.contentLoad.get(entry.server);
    if (load !== undefined) this.contentLoad.set(entry.server, Math.max(load - entry.weight, 0));
  }

  protected override async afterFinish(request: RoutingRequest): Promise<void> {
    this.releaseContent(request.id);
  }

  protected override onServerAdded(server: ServerState): void {
    if (!this.contentLoad.has(server)) this.contentLoad.set(server, 0);
  }

  protected override onServerRemoved(server: ServerState): void {
    for (const [id, session] of [...this.sessions]) if (session.server === server) this.forget(id);
    this.contentLoad.delete(server);
  }

  /** Known sessions (for tests and the admin API). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /** The session table's estimated size (see max_table_bytes). */
  get sessionTableBytes(): number {
    return this.tableBytes;
  }

  sessionServer(conversationId: string): ServerState | undefined {
    return this.sessions.get(conversationId)?.server;
  }

  protected override extraSnapshot(): Record<string, unknown> {
    return {
      sessions: this.sessions.size,
      session_table_bytes: this.tableBytes,
      content_load: Object.fromEntries(this.servers.map((s) => [s.id, this.contentLoad.get(s) ?? 0])),
    };
  }

  override async close(): Promise<void> {
    await this.tokenizer?.close();
  }
}
