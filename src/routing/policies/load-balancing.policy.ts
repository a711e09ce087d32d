import { z } from 'zod';
import type { ServerState } from '../../servers';
import { PromptTokenizer } from '../../tokenizer';
import { BaseRouter } from '../base-router';
import type { GetNextServerOptions, RouteResult, RoutingRequest } from '../router.interface';
import { RoutingPolicy } from '../routing-policy.decorator';
import { LeastLoadedPicker } from './least-loaded';
import { tokenizerArgs } from './policy-args';

export const loadBalancingArgs = z.strictObject({
  /** Balance prompt tokens in flight instead of requests in flight. */
  use_tokens: z.boolean().default(false),
  ...tokenizerArgs,
});
export type LoadBalancingArgs = z.output<typeof loadBalancingArgs>;

/**
 * Least active requests (or prompt tokens with `use_tokens`) wins; ties go round robin.
 * Text prompts and chat messages are tokenized to be counted.
 */
@RoutingPolicy('load_balancing', loadBalancingArgs)
export class LoadBalancingRouter extends BaseRouter<LoadBalancingArgs> {
  private readonly picker = new LeastLoadedPicker();
  private tokenizer?: PromptTokenizer;

  protected override onInit(): void {
    if (this.args.use_tokens) this.tokenizer = new PromptTokenizer(this.args);
  }

  async getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult> {
    this.candidates(options);
    let tokens = 0;
    const prompt = this.tokenizer ? await this.tokenizer.tokenize(request) : undefined;
    if (prompt) for (const list of prompt.lists) tokens += list.length;
    // Candidates again: the server set may have changed while tokenizing.
    const candidates = this.candidates(options);
    const load = this.args.use_tokens ? (s: ServerState) => s.clusterActiveTokens : (s: ServerState) => s.clusterActiveRequests;
    const server = this.picker.pick(candidates, load);
    return this.reserve(request, server, tokens, { promptTokens: prompt ? tokens : undefined, tokenIds: prompt?.tokenIds, untokenized: prompt?.untokenized, server_info: server.serverInfo ?? {} });
  }

  override async close(): Promise<void> {
    await this.tokenizer?.close();
  }
}
