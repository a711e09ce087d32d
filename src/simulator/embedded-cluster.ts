import { hmacKeyFromEnv } from '../kv-events-zmq/report-frame';
import { startSimCluster } from './index';

export interface EmbeddedClusterOptions {
  context: number;
  generation: number;
  latency: 'demo' | 'zero';
  kv_blocks?: number;
  tokens_per_block?: number;
  kv_hash_algo?: string;
  dp_ranks?: number;
  kv_report_port?: number;
}

/** The simulated cluster `npm start` serves from, on free loopback ports in this process. */
export async function startEmbeddedCluster(options: EmbeddedClusterOptions): Promise<{ contextUrls: string[]; generationUrls: string[]; close: () => Promise<void> }> {
  const cluster = await startSimCluster({
    context: options.context,
    generation: options.generation,
    host: '127.0.0.1',
    latency: options.latency,
    ...(options.kv_blocks ? { kvBlocks: options.kv_blocks } : {}),
    ...(options.tokens_per_block ? { tokensPerBlock: options.tokens_per_block } : {}),
    ...(options.kv_hash_algo ? { kvHashAlgo: options.kv_hash_algo } : {}),
    ...(options.dp_ranks ? { dpRanks: options.dp_ranks } : {}),
    ...(options.kv_report_port
      ? { kvReports: { address: `tcp://127.0.0.1:${options.kv_report_port}`, hmacKey: hmacKeyFromEnv(process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY) } }
      : {}),
  });
  return { contextUrls: cluster.contextUrls, generationUrls: cluster.generationUrls, close: () => cluster.close() };
}
