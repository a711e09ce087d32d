import type { KvWorker } from './kv-worker';

/** TensorRT-LLM's block size when neither the config nor any worker says. */
export const DEFAULT_TOKENS_PER_BLOCK = 32;

/** The `tokens_per_block` a worker announces in /server_info, if it is a usable one. */
export function workerTokensPerBlock(server: Pick<KvWorker, 'serverInfo'>): number | undefined {
  const tpb = server.serverInfo?.tokens_per_block;
  return typeof tpb === 'number' && Number.isInteger(tpb) && tpb > 0 ? tpb : undefined;
}

/**
 * The block size a router hashes with: the configured one, else (as TensorRT-LLM does) the
 * first worker's announced one, adopted once and kept, else the default.
 */
export class TokensPerBlock {
  private adopted?: number;

  constructor(private readonly configured: number | undefined) {}

  /** Adopts the first announced size among `servers` when none is configured or adopted yet. */
  resolve(servers: readonly Pick<KvWorker, 'serverInfo'>[]): number {
    if (this.configured !== undefined) return this.configured;
    if (this.adopted === undefined) {
      for (const s of servers) {
        const tpb = workerTokensPerBlock(s);
        if (tpb !== undefined) {
          this.adopted = tpb;
          break;
        }
      }
    }
    return this.adopted ?? DEFAULT_TOKENS_PER_BLOCK;
  }

  get source(): 'config' | 'server_info' | 'default' {
    if (this.configured !== undefined) return 'config';
    return this.adopted !== undefined ? 'server_info' : 'default';
  }
}
