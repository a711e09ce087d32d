import { Inject, Module, type DynamicModule } from '@nestjs/common';
import { z } from 'zod';
import { blockHashChain } from '../../../src/kv-cache/block-hash';
import { PromptTokenizer } from '../../../src/tokenizer';
import { BaseRouter, LeastLoadedPicker, RoutingPolicy, type GetNextServerOptions, type RouteResult, type RoutingRequest } from '../../../src/routing';
import type { SimWorker } from '../../../src/simulator';

const ORACLE_WORKERS = Symbol('ORACLE_WORKERS');

/**
 * The best a KV-aware router could do: the same score as kv_cache_aware, computed on the
 * workers' true cache contents (read in process) instead of the event-fed tables.
 */
const oracleArgs = z.strictObject({
  max_batch_size: z.number().int().positive().default(64),
  tokens_per_block: z.number().int().positive().default(32),
  /** Text prompts: the workers' tokenizer (ids in the request are used as they are). */
  tokenizer_dir: z.string().optional(),
});

@RoutingPolicy('oracle', oracleArgs)
export class OracleRouter extends BaseRouter<z.output<typeof oracleArgs>> {
  private readonly picker = new LeastLoadedPicker();
  private tokenizer!: PromptTokenizer;

  constructor(@Inject(ORACLE_WORKERS) private readonly workers: Map<string, SimWorker>) {
    super();
  }

  protected override onInit(): void {
    this.tokenizer = new PromptTokenizer({ tokenizer_dir: this.args.tokenizer_dir, tokenizer_threads: 1 });
  }

  override async close(): Promise<void> {
    await this.tokenizer.close();
  }

  async getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult> {
    const ids = (await this.tokenizer.tokenize(request)).lists[0] ?? [];
    const candidates = this.candidates(options);
    const chain = blockHashChain(ids, this.args.tokens_per_block);
    const padded = Math.max(chain.length * this.args.tokens_per_block, 1);
    const scores = candidates.map((s) => {
      const w = this.workers.get(s.origin);
      const matched = (w?.kv.matchPrefix(chain) ?? 0) * this.args.tokens_per_block;
      return matched / padded - s.activeRequests / this.args.max_batch_size;
    });
    const best = Math.max(...scores);
    const server = candidates[this.picker.tieBreak(scores.flatMap((v, i) => (v === best ? [i] : [])))];
    return this.reserve(request, server);
  }
}

@Module({})
export class OracleModule {
  static forWorkers(workers: SimWorker[]): DynamicModule {
    return {
      module: OracleModule,
      providers: [{ provide: ORACLE_WORKERS, useValue: new Map(workers.map((w) => [new URL(w.url).origin, w])) }, OracleRouter],
    };
  }
}
