/**
 * Router arguments TensorRT-LLM's routers take that this router's policies do not implement.
 * A config file may carry them (TensorRT-LLM passes unknown arguments through and ignores
 * them), so they are dropped with a warning instead of refusing to start.
 */
const TRTLLM_UNSUPPORTED_ARGS: Record<string, readonly string[]> = {
  '*': ['max_batch_size', 'max_num_tokens'],
  kv_cache_aware: ['use_harmony', 'model_path'],
  load_balancing: [],
  round_robin: [],
  conversation: [],
  centralized_kv_cache_aware: [],
};

export interface SplitRouterArgs {
  /** Arguments for the policy's schema. */
  args: Record<string, unknown>;
  /** Keys TensorRT-LLM knows that this router does not implement (ignored). */
  unsupported: string[];
  /** Keys neither knows (ignored). */
  unknown: string[];
}

/**
 * Splits a router block read from a config file: the keys the policy takes, and the ignored
 * rest, sorted into the two kinds of warning.
 */
export function splitRouterArgs(policy: string, policyKeys: ReadonlySet<string>, given: Record<string, unknown>): SplitRouterArgs {
  const args: Record<string, unknown> = {};
  const unsupported: string[] = [];
  const unknown: string[] = [];
  const known = new Set([...TRTLLM_UNSUPPORTED_ARGS['*'], ...(TRTLLM_UNSUPPORTED_ARGS[policy] ?? [])]);
  for (const [key, value] of Object.entries(given)) {
    if (policyKeys.has(key)) args[key] = value;
    else if (known.has(key)) unsupported.push(key);
    else unknown.push(key);
  }
  return { args, unsupported, unknown };
}
