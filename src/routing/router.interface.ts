import type { RequestKind } from '../common';
import type { TokenIds } from '../common/token-id-array';
import type { ServerRole } from '../config';
import type { ServerState } from '../servers';

export type { RequestKind, TokenIds };

/**
 * What a router sees of a client request. `id` is owned by the router layer (one per client
 * request) and keys all per-request router state, so copies of the body cannot break it.
 */
export interface RoutingRequest {
  readonly id: string;
  readonly kind: RequestKind;
  readonly body: Readonly<Record<string, unknown>>;
  /** Prompt token ids an earlier pick of this request returned (RouteInfo.tokenIds): not tokenized again. */
  readonly tokenIds?: TokenIds;
  /** The client's request headers (the conversation policy reads session ids from them). */
  readonly headers?: Readonly<Record<string, string | string[] | undefined>>;
  /** Why an earlier pick could not tokenize the prompt's text (RouteInfo.untokenized). */
  readonly untokenized?: string;
  /** A sub-agent's parent session id (see conversation-id.ts routingIdOf). */
  readonly subagentAffinity?: SubagentAffinity;
  /** The block keys an earlier pick of this request computed (RouteInfo.blockChains): not hashed again. */
  readonly blockChains?: BlockChains;
}

/**
 * A prompt's block-key chains as one pick computed them, for the other pool's pick of the same
 * request: reused when its token lists are the very same lists and its scope (hash algorithm,
 * block size, cache salt) is the same.
 */
export interface BlockChains {
  readonly scope: string;
  readonly lists: readonly TokenIds[];
  readonly chains: readonly (readonly (bigint | string)[])[];
}

/** The parent session id a gateway header gave a sub-agent's request, and the pools that place it by that id. */
export interface SubagentAffinity {
  readonly id: string;
  readonly roles: readonly ServerRole[];
}

/** What a KV-aware router hashes prompts with, as TensorRT-LLM's /cluster_info reports it. */
export interface RoutingKeyConfig {
  tokens_per_block: number;
  kv_cache_hash_algo: string;
}

export interface RouteInfo {
  /** Prompt tokens already cached on the chosen server (KV-aware policies). */
  matchedTokens?: number;
  promptTokens?: number;
  /** The prompt's token ids this pick computed, to forward to the workers instead of the text. */
  tokenIds?: TokenIds;
  /** Set when the prompt could not be tokenized with the model's own tokenizer: why. */
  untokenized?: string;
  /** The prompt's block keys this pick computed, for the next pick of the request. */
  blockChains?: BlockChains;
  /** Written as `disaggregated_params.route_hint` into the body sent to this server (a data-parallel rank). */
  routeHint?: { dp_rank: number };
  [key: string]: unknown;
}

export interface RouteResult {
  server: ServerState;
  info: RouteInfo;
}

export interface GetNextServerOptions {
  /** URL(s) that must not be chosen: the other phase's server, or a server that just failed. */
  excludeServer?: string | readonly string[];
}

export interface FinishRequestOptions {
  success?: boolean;
}

export interface RouterServerSnapshot {
  id: string;
  url: string;
  active_requests: number;
  active_tokens: number;
  kv_blocks_known: number;
}

export interface RouterSnapshot {
  policy: string;
  role: ServerRole;
  args: Readonly<Record<string, unknown>>;
  servers: RouterServerSnapshot[];
  in_flight: number;
  [key: string]: unknown;
}

/** The contract every routing policy implements, as TensorRT-LLM's routers (see docs/protocol.md "Two-phase request"). */
export interface Router {
  readonly policy: string;
  readonly role: ServerRole;
  readonly args: Readonly<Record<string, unknown>>;
  getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult>;
  finishRequest(request: RoutingRequest, options?: FinishRequestOptions): Promise<void>;
  addServer(server: ServerState): void;
  removeServer(server: ServerState): void;
  /** The whole ready set changed at once (discovery refresh). */
  onServersUpdated(servers: readonly ServerState[]): void;
  readonly servers: readonly ServerState[];
  snapshot(): RouterSnapshot;
  /** KV-aware routers: the block size and hash algorithm of their ready servers (none known: undefined). */
  routingKeyConfig?(): RoutingKeyConfig | undefined;
  /** Stops background work (polling); in-flight requests may still finish afterwards. */
  close(): Promise<void>;
}
