import { getTokenizer, renderQwen3Chat } from '../../tokenizer';
import type { RoutingRequest } from '../router.interface';
import { chatRendersPlainly, promptSourceOf } from './prompt-tokens';
import { acquireTokenizerThreads, releaseTokenizerThreads, THREADED_TOKENIZERS, type TokenizerThreadPool } from './tokenizer-threads';

/**
 * Token ids of a request's prompt for the KV-aware policies. Token ids in the request are
 * used as is; text goes through the configured tokenizer (on worker threads when it is an
 * expensive one). A single prompt's ids are kept on the request (`tokenIds`), so the other
 * pool's router reuses them and the disagg flow forwards them to the workers, which then
 * skip tokenization (TensorRT-LLM rewrites the request the same way). The tokenizer must be
 * the served model's: forwarded ids replace the worker's own tokenization.
 */
export class PromptTokenizer {
  private readonly pool?: TokenizerThreadPool;

  constructor(
    readonly name: string,
    threads: number,
  ) {
    // Threads start with the first text to tokenize (as TensorRT-LLM loads its tokenizer on
    // first use): a router fed token ids never pays for loading a tokenizer.
    if (threads > 0 && THREADED_TOKENIZERS.includes(name)) this.pool = acquireTokenizerThreads(name, threads);
  }

  async tokenLists(request: RoutingRequest): Promise<number[][]> {
    if (request.tokenIds) return [request.tokenIds];
    const source = promptSourceOf(request.kind, request.body);
    let lists: number[][];
    if (source.type === 'tokens') lists = source.tokenLists;
    else if (source.type === 'text') lists = await Promise.all(source.texts.map((t) => this.encode(t)));
    else lists = [await this.encodeChat(source.messages)];
    // Ids of a chat the router cannot render exactly still route well, but are not forwarded.
    if (lists.length === 1 && (source.type !== 'chat' || chatRendersPlainly(request.body))) request.tokenIds = lists[0];
    return lists;
  }

  async close(): Promise<void> {
    if (this.pool) await releaseTokenizerThreads(this.name, this.pool);
  }

  private encode(text: string): Promise<number[]> | number[] {
    return this.pool ? this.pool.encode(text) : getTokenizer(this.name).encode(text);
  }

  private async encodeChat(messages: Parameters<typeof renderQwen3Chat>[0]): Promise<number[]> {
    // The threaded tokenizer is Qwen3's: render its chat template here, encode over there.
    return this.pool ? this.pool.encode(renderQwen3Chat(messages, true)) : getTokenizer(this.name).encodeChat(messages);
  }
}
