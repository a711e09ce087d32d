import { ConfigError } from './config-error';

/** TensorRT-LLM's environment switches of the disaggregated server that this router honours (README "Coming from trtllm-serve"). */
export interface TrtllmEnv {
  /** TRTLLM_DISAGG_NO_RETRY=1: every worker call is tried once. */
  noRetry: boolean;
  /** TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1: generation-only benchmark mode, the context pool is skipped. */
  benchmarkGenOnly: boolean;
  /** TRTLLM_KVCACHE_AWARE_ROUTER_HASH_TOKENS_PER_BLOCK: the hashing routers' block size, over their arguments and the workers'. */
  hashTokensPerBlock: number | undefined;
  /** TLLM_LOG_ROUTE_TIMING=1: each router logs its picks' time percentiles every 500 picks. */
  logRouteTiming: boolean;
}

/** Reads the switches; a block size that is not a positive integer refuses to start. */
export function trtllmEnv(env: NodeJS.ProcessEnv = process.env): TrtllmEnv {
  const tpb = env.TRTLLM_KVCACHE_AWARE_ROUTER_HASH_TOKENS_PER_BLOCK;
  let hashTokensPerBlock: number | undefined;
  if (tpb !== undefined) {
    hashTokensPerBlock = Number(tpb);
    if (tpb.trim() === '' || !Number.isInteger(hashTokensPerBlock) || hashTokensPerBlock <= 0) {
      throw new ConfigError(`TRTLLM_KVCACHE_AWARE_ROUTER_HASH_TOKENS_PER_BLOCK must be a positive integer, not ${JSON.stringify(tpb)}`);
    }
  }
  return {
    noRetry: env.TRTLLM_DISAGG_NO_RETRY === '1',
    benchmarkGenOnly: env.TRTLLM_DISAGG_BENCHMARK_GEN_ONLY === '1',
    hashTokensPerBlock,
    logRouteTiming: env.TLLM_LOG_ROUTE_TIMING === '1',
  };
}
