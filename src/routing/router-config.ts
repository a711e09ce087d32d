import type { AppConfig, ServerRole } from '../config';

/** A policy choice: `type` plus that policy's arguments. */
export interface RouterConfig {
  type: string;
  args: Record<string, unknown>;
  /** Pool-level keys TensorRT-LLM copies into router args, applied when the policy takes them. */
  inherited: Record<string, unknown>;
}

/** The router block of a pool, as TensorRT-LLM reads it. */
export function routerConfigFor(config: AppConfig, role: ServerRole): RouterConfig {
  const pool = role === 'context' ? config.context_servers : config.generation_servers;
  const { type = 'round_robin', ...args } = pool?.router ?? { type: 'round_robin' };
  const inherited: Record<string, unknown> = {};
  if (pool?.max_batch_size !== undefined) inherited.max_batch_size = pool.max_batch_size;
  if (pool?.max_num_tokens !== undefined) inherited.max_num_tokens = pool.max_num_tokens;
  const tpb = pool?.kv_cache_config?.tokens_per_block;
  if (tpb !== undefined) inherited.tokens_per_block = tpb;
  return { type, args, inherited };
}
