import { randomUUID } from 'node:crypto';
import { V1_BLOCK_KEY_ALGO } from '../kv-cache/block-hash';
import { isKvHashAlgo, KV_HASH_ALGOS } from '../kv-cache/hash-algos';
import { CtxRegistry } from './ctx-registry';
import { FaultRule } from './faults';
import { LatencyOptions, LatencyPreset } from './latency-model';

export const SIM_ROLES = ['context', 'generation', 'mixed'] as const;
export type SimRole = (typeof SIM_ROLES)[number];

/**
 * How a generation worker treats a generation_only request's ctx_request_id:
 * `registry` accepts only ids published by a context worker sharing its registry,
 * `blind` accepts any id (as a worker would whose KV transfer cannot be checked).
 */
export type CtxCheck = 'registry' | 'blind';

export interface SimWorkerOptions {
  role?: SimRole;
  /** Listen address, default 127.0.0.1. */
  host?: string;
  /** Listen port, default 0 (a free port). */
  port?: number;
  /** Model name in answers and /v1/models, default "sim-model". */
  model?: string;
  /** Tokenizer for text prompts: "qwen3" (default) or "bytes". */
  tokenizer?: string;
  /** Load the tokenizer while starting instead of on the first text request. */
  preloadTokenizer?: boolean;
  /** KV cache capacity in blocks, default 4096. */
  kvBlocks?: number;
  /** Tokens per KV block, default 32. */
  tokensPerBlock?: number;
  /** KV block-key algorithm announced in /server_info and on events, default v1_block_key. */
  kvHashAlgo?: string;
  /** `window_size` of KV events, default 4096. */
  windowSize?: number;
  /** KV events kept between two polls, default 100000. */
  maxBufferedEvents?: number;
  /** "zero" (default), "demo" or explicit figures. */
  latency?: LatencyPreset | Partial<LatencyOptions>;
  /** Default "registry" when a registry is given, else "blind". */
  ctxCheck?: CtxCheck;
  /** Shared by the workers of one cluster; a private one is made when ctxCheck is "registry". */
  registry?: CtxRegistry;
  /** max_tokens when the request has none, default 16. */
  defaultMaxTokens?: number;
  /** Longest prompt plus max_tokens, in tokens (400 beyond, as a real worker's max_seq_len), default 32768. */
  maxSeqLen?: number;
  /** Largest request body (413 beyond), default 4 MiB. */
  maxBodyBytes?: number;
  /** Request bodies kept for inspection, default 20. */
  keepReceived?: number;
  /** Fault rules active from the start. */
  faults?: FaultRule[];
  /** Data-parallel ranks, each with its own KV cache, default 1; a request's `route_hint.dp_rank` picks one, else they take turns. */
  dpRanks?: number;
  /** The instance id announced as /server_info `worker_id`, default a fresh one. */
  workerId?: string;
  /** Push KV events and load to a centralized KV router's ZMQ endpoint, as TensorRT-LLM's reporter does. */
  kvReports?: SimKvReportOptions;
  /**
   * Decodes bodies flagged `X-TRTLLM-Msgpack: 1`, as the newest TensorRT-LLM workers do (default
   * true); false plays an older worker, which answers them 400 (docs/protocol.md "Body encoding").
   */
  msgpack?: boolean;
}

export interface SimKvReportOptions {
  /** The router's endpoint, `tcp://host:port`. */
  address: string;
  /** The shared HMAC key (TLLM_CENTRALIZED_ROUTER_HMAC_KEY); none: unsigned frames. */
  hmacKey?: Buffer;
  /** `ctx` or `gen`; default from the role (context: ctx, else gen). */
  namespace?: string;
  /** One report per rank (`<worker_id>:rank<N>`, default), or the worker as a whole. */
  perRank?: boolean;
  /** How often new events are pushed, default 10 ms. */
  eventIntervalMs?: number;
  /** How often load is pushed, default 500 ms. */
  loadIntervalMs?: number;
}

export interface ResolvedSimOptions {
  role: SimRole;
  host: string;
  port: number;
  model: string;
  tokenizer: string;
  preloadTokenizer: boolean;
  kvBlocks: number;
  tokensPerBlock: number;
  kvHashAlgo: string;
  windowSize: number;
  maxBufferedEvents: number;
  ctxCheck: CtxCheck;
  registry: CtxRegistry | undefined;
  defaultMaxTokens: number;
  maxSeqLen: number;
  maxBodyBytes: number;
  keepReceived: number;
  dpRanks: number;
  workerId: string;
  kvReports: SimKvReportOptions | undefined;
  msgpack: boolean;
}

export function resolveSimOptions(opts: SimWorkerOptions): ResolvedSimOptions {
  const role = opts.role ?? 'mixed';
  if (!SIM_ROLES.includes(role)) throw new RangeError(`role must be one of ${SIM_ROLES.join(', ')}, got "${role}"`);
  const ctxCheck = opts.ctxCheck ?? (opts.registry ? 'registry' : 'blind');
  if (ctxCheck !== 'registry' && ctxCheck !== 'blind') throw new RangeError(`ctxCheck must be registry or blind`);
  const int = (name: string, v: number | undefined, dflt: number, min: number): number => {
    const value = v ?? dflt;
    if (!Number.isInteger(value) || value < min) throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
    return value;
  };
  return {
    role,
    host: opts.host ?? '127.0.0.1',
    port: int('port', opts.port, 0, 0),
    model: opts.model ?? 'sim-model',
    tokenizer: opts.tokenizer ?? 'qwen3',
    preloadTokenizer: opts.preloadTokenizer ?? false,
    kvBlocks: int('kvBlocks', opts.kvBlocks, 4096, 0),
    tokensPerBlock: int('tokensPerBlock', opts.tokensPerBlock, 32, 1),
    kvHashAlgo: kvHashAlgo(opts.kvHashAlgo),
    windowSize: int('windowSize', opts.windowSize, 4096, 1),
    maxBufferedEvents: int('maxBufferedEvents', opts.maxBufferedEvents, 100_000, 1),
    ctxCheck,
    registry: opts.registry ?? (ctxCheck === 'registry' ? new CtxRegistry() : undefined),
    defaultMaxTokens: int('defaultMaxTokens', opts.defaultMaxTokens, 16, 1),
    maxSeqLen: int('maxSeqLen', opts.maxSeqLen, 32_768, 1),
    maxBodyBytes: int('maxBodyBytes', opts.maxBodyBytes, 4 * 1024 * 1024, 1),
    keepReceived: int('keepReceived', opts.keepReceived, 20, 0),
    dpRanks: int('dpRanks', opts.dpRanks, 1, 1),
    workerId: opts.workerId ?? `sim-${randomUUID()}`,
    kvReports: opts.kvReports,
    msgpack: opts.msgpack ?? true,
  };
}

function kvHashAlgo(name: string | undefined): string {
  const algo = name ?? V1_BLOCK_KEY_ALGO;
  if (!isKvHashAlgo(algo)) throw new RangeError(`kvHashAlgo must be one of ${KV_HASH_ALGOS.join(', ')}, got "${algo}"`);
  return algo;
}
