import { Logger } from '@nestjs/common';
import { getTokenizer } from './builtin-tokenizers';
import { renderQwen3Chat } from './chatml-template';
import type { ChatMessage } from './text-tokenizer';
import { ChatTemplateError, type ChatTemplateInput } from './hf/chat-template';
import { RequestTemplateRenderer } from './hf/request-template-renderer';
import type { PromptRequest } from './prompt-request';
import type { TokenIds } from '../common/token-id-array';
import { allowConfiguredTokenizerDir, loadModelTokenizer, ModelTokenizerResolver, type ModelTokenizer } from './model-tokenizers';
import type { WordEncoder } from './hf/hf-tokenizer-source';
import { chatRendersPlainly, promptSourceOf } from './prompt-tokens';
import { workerChatMessages } from './worker-chat-messages';
import { acquirePieceCache, IncrementalEncoder, pieceCutterFor, releasePieceCache, type PieceCache, type PieceEncoder } from './incremental';
import { exceedsChars, maxPromptChars } from './prompt-size-bound';
import { acquireTokenizerThreads, releaseTokenizerThreads, THREADED_TOKENIZERS, type TokenizerThreadPool } from './tokenizer-threads';

/** The tokenizer arguments of the policies that tokenize (see policy-args). */
export interface PromptTokenizerArgs {
  /** A built-in tokenizer named explicitly (the simulator's). */
  tokenizer?: string;
  tokenizer_dir?: string;
  custom_tokenizer?: string;
  tokenizer_threads: number;
  /** Size of the process' cache of tokenized prompt pieces, in MB (0 or unset: every prompt encoded whole). */
  tokenizer_cache_mb?: number;
  /** Longest prompt text tokenized (characters); unset: the model's maximum length × MAX_CHARS_PER_TOKEN. */
  tokenizer_max_prompt_chars?: number;
}

const logger = new Logger('PromptTokenizer');

/** The simulator's model name is served with the simulator's default tokenizer. */
const SIMULATOR_MODELS: Readonly<Record<string, string>> = { 'sim-model': 'qwen3' };
const MODEL_POOL = 'model-tokenizers';
/** One thread of its own for long texts, so short prompts never wait behind them. */
const LONG_TEXT_POOL = 'model-tokenizers-long';
/** A text this long takes the long-text thread (tens of milliseconds of encoding and more). */
export const LONG_TEXT_CHARS = 64 * 1024;

/** A request's prompt as token lists, and what of it may be forwarded to the workers. */
export interface PromptTokens {
  lists: TokenIds[];
  /** The single prompt's ids, when a worker would tokenize it to exactly these. */
  tokenIds?: TokenIds;
  /** Why the text could not be tokenized (no lists then). */
  untokenized?: string;
}

/**
 * Token ids of a request's prompt for the KV-aware policies. Token ids in the request are
 * used as is; text goes through the model's own tokenizer: `tokenizer_dir` (or
 * `custom_tokenizer`) when configured, else the one found for the request's `model` (a local
 * directory or the Hugging Face cache), chats through that model's chat template, on worker
 * threads. A single prompt's ids are returned as `tokenIds` (the policy puts them in its route
 * result), so the other pool's router reuses them and the disagg flow forwards them to the
 * workers, which then skip tokenization. Ids from another model's tokenizer are never
 * produced: a request whose model has no tokenizer keeps its text and gets no ids
 * (`untokenized` says why), so it is routed by load only.
 */
export class PromptTokenizer {
  private readonly configured?: ModelTokenizer;
  private readonly resolver = new ModelTokenizerResolver();
  private readonly requestTemplates = new RequestTemplateRenderer();
  private builtinPool?: TokenizerThreadPool;
  private modelPool?: TokenizerThreadPool;
  private longTextPool?: TokenizerThreadPool;
  private readonly pieceCache?: PieceCache;
  private readonly incremental = new Map<string, IncrementalEncoder>();

  private closed = false;

  constructor(private readonly args: PromptTokenizerArgs) {
    const dir = args.tokenizer_dir ?? args.custom_tokenizer;
    if (dir !== undefined) {
      this.configured = loadModelTokenizer(dir, args.tokenizer_threads === 0);
      allowConfiguredTokenizerDir(dir);
      if (args.tokenizer_threads > 0) this.preloadThreads(this.configured.dir);
    }
    this.pieceCache = acquirePieceCache(this, args.tokenizer_cache_mb ?? 0);
  }

  async tokenize(request: PromptRequest): Promise<PromptTokens> {
    if (request.tokenIds) return { lists: [request.tokenIds], tokenIds: request.tokenIds };
    const source = promptSourceOf(request.kind, request.body);
    if (source.type === 'tokens') return { lists: source.tokenLists };
    const builtin = this.args.tokenizer ?? (this.configured ? undefined : SIMULATOR_MODELS[String(request.body.model)]);
    if (!this.configured && builtin !== undefined) return this.builtinLists(request, builtin);
    const model = this.configured ?? this.resolver.resolve(request.body.model);
    if (!model) return { lists: [], untokenized: 'no_tokenizer' };
    const body = request.body;
    const limit = this.args.tokenizer_max_prompt_chars ?? maxPromptChars(model.dir);
    // Looked at before any rendering or encoding: a prompt that cannot fit the model costs nothing more.
    if (exceedsChars(source.type === 'text' ? source.texts : [body.messages, body.tools, body.documents], limit)) return { lists: [], untokenized: 'prompt_too_long' };
    if (source.type === 'text') {
      const special = body.add_special_tokens !== false;
      const lists = await Promise.all(source.texts.map((t) => this.encode(model, t, special)));
      return { lists, tokenIds: lists.length === 1 ? lists[0] : undefined };
    }
    if (!model.templates.hasTemplate) return { lists: [], untokenized: 'no_chat_template' };
    let text: string;
    try {
      const input = templateInput(body);
      // A template the request brings is the client's program: rendered in the sandbox, its failures are the client's 400.
      text = model.templates.isRequestTemplate(input) ? await this.requestTemplates.render(model.templates, input) : model.templates.render(input);
    } catch (err) {
      if (!(err instanceof ChatTemplateError)) throw err;
      return { lists: [], untokenized: 'chat_template_error' };
    }
    if (text.length > limit) return { lists: [], untokenized: 'prompt_too_long' };
    // TensorRT-LLM's chat requests add no special tokens beyond the template's by default.
    const ids = await this.encode(model, text, body.add_special_tokens === true);
    return { lists: [ids], tokenIds: idsForwardable(source.messages) ? ids : undefined };
  }

  async close(): Promise<void> {
    this.closed = true;
    releasePieceCache(this);
    await this.requestTemplates.close();
    if (this.builtinPool) await releaseTokenizerThreads(this.args.tokenizer ?? 'qwen3', this.builtinPool);
    if (this.modelPool) await releaseTokenizerThreads(MODEL_POOL, this.modelPool);
    if (this.longTextPool) await releaseTokenizerThreads(LONG_TEXT_POOL, this.longTextPool);
  }

  private encode(model: ModelTokenizer, text: string, addSpecialTokens: boolean): Promise<TokenIds> | TokenIds {
    const incremental = this.incrementalFor(model);
    return incremental ? incremental.encode(text, addSpecialTokens) : this.encodeWhole(model, text, addSpecialTokens);
  }

  private encodeWhole(model: ModelTokenizer, text: string, addSpecialTokens: boolean): Promise<number[]> | number[] {
    if (this.args.tokenizer_threads === 0) return model.encodeHere(text, addSpecialTokens);
    return this.threads(text.length).encode(text, { dir: model.dir, addSpecialTokens });
  }

  /**
   * The configured tokenizer is loaded on the short-text threads at start, not by the first
   * request: that load takes seconds of a thread, and the first request (and every small one
   * behind it) would wait for it. The long-text thread stays lazy (README "Routing policies").
   */
  private preloadThreads(dir: string): void {
    this.threads(0).preload(dir).catch((err: Error) => {
      if (!this.closed) logger.warn(`the tokenizer threads could not load ${dir} at start: ${err.message}`);
    });
  }

  /** The shared threads, or for a long text (LONG_TEXT_CHARS) the long-text thread. */
  private threads(chars: number): TokenizerThreadPool {
    if (chars >= LONG_TEXT_CHARS) return (this.longTextPool ??= acquireTokenizerThreads(LONG_TEXT_POOL, 1));
    return (this.modelPool ??= acquireTokenizerThreads(MODEL_POOL, this.args.tokenizer_threads));
  }

  /** With the piece cache on: the model's incremental encoder, on the same threads as the whole encode. */
  private incrementalFor(model: ModelTokenizer): IncrementalEncoder | undefined {
    if (!this.pieceCache) return undefined;
    let encoder = this.incremental.get(model.dir);
    if (!encoder) {
      const pieces: PieceEncoder = {
        encode: (text, special) => this.encodeWhole(model, text, special),
        encodePieces: (texts) => {
          if (this.args.tokenizer_threads === 0) return texts.map((t) => Int32Array.from(model.encodeHere(t, false)));
          const chars = texts.reduce((n, t) => n + t.length, 0);
          const words = chars < LONG_TEXT_CHARS ? model.wordEncoder() : null;
          return words ? this.encodeByWords(words, texts, model.dir) : this.threads(chars).encodePieces(texts, model.dir);
        },
      };
      encoder = new IncrementalEncoder(model.dir, pieceCutterFor(model.dir), this.pieceCache, pieces);
      this.incremental.set(model.dir, encoder);
    }
    return encoder;
  }

  /**
   * Pieces of a byte-level BPE tokenizer, assembled here from cached words: only the words this
   * thread has not seen go to a tokenizer thread (as a list of words, each once), so the next
   * turn of a conversation, made of words seen before, costs no thread hop at all. What still
   * misses (words too long to cache, a cache cleared in between) is encoded on the thread whole.
   */
  private async encodeByWords(words: WordEncoder, texts: string[], dir: string): Promise<Int32Array[]> {
    let tries = texts.map((t) => words.tryEncode(t));
    const missing = [...new Set(tries.flatMap((t) => t.missing ?? []))];
    if (missing.length > 0) {
      const learned = await this.threads(0).encodeWords(missing, dir);
      missing.forEach((word, i) => words.learn(word, learned[i]));
      tries = tries.map((t, i) => (t.missing ? words.tryEncode(texts[i]) : t));
    }
    const left = texts.flatMap((text, i) => (tries[i].missing ? [i] : []));
    const whole = left.length > 0 ? await this.threads(0).encodePieces(left.map((i) => texts[i]), dir) : [];
    return tries.map((t, i) => (t.ids ? Int32Array.from(t.ids) : whole[left.indexOf(i)]));
  }

  /** The simulator's tokenizers (Qwen3, bytes), chats in Qwen3's layout. */
  private async builtinLists(request: PromptRequest, name: string): Promise<PromptTokens> {
    const source = promptSourceOf(request.kind, request.body);
    const threads = this.args.tokenizer_threads;
    if (threads > 0 && THREADED_TOKENIZERS.includes(name)) this.builtinPool ??= acquireTokenizerThreads(name, threads);
    const pool = this.builtinPool;
    const encode = (text: string): Promise<number[]> | number[] => (pool ? pool.encode(text) : getTokenizer(name).encode(text));
    let lists: number[][];
    if (source.type === 'text') lists = await Promise.all(source.texts.map(encode));
    else if (source.type === 'chat') {
      lists = [pool ? await pool.encode(renderQwen3Chat(source.messages, true)) : getTokenizer(name).encodeChat(source.messages)];
    } else lists = source.tokenLists;
    // Ids of a chat this layout cannot render exactly still route well, but are not forwarded.
    const forwardable = lists.length === 1 && (source.type !== 'chat' || chatRendersPlainly(request.body));
    return { lists, tokenIds: forwardable ? lists[0] : undefined };
  }
}

function templateInput(body: Readonly<Record<string, unknown>>): ChatTemplateInput {
  const kwargs = body.chat_template_kwargs;
  return {
    // As the worker renders them (worker-chat-messages.ts); chats with media parts as they came.
    messages: Array.isArray(body.messages) ? (workerChatMessages(body.messages) ?? body.messages) : [],
    tools: body.tools ?? undefined,
    documents: body.documents ?? undefined,
    add_generation_prompt: typeof body.add_generation_prompt === 'boolean' ? body.add_generation_prompt : undefined,
    continue_final_message: body.continue_final_message === true,
    chat_template: typeof body.chat_template === 'string' ? body.chat_template : undefined,
    chat_template_kwargs: typeof kwargs === 'object' && kwargs !== null && !Array.isArray(kwargs) ? (kwargs as Record<string, unknown>) : undefined,
  };
}

/**
 * Whether the ids are those every supported worker renders, and so may be forwarded. Content
 * given as parts is rendered as the worker parses it (text parts joined, see
 * worker-chat-messages.ts) and routed by those ids, but the worker's parsing of parts (media
 * placeholders above all) stays the authority on its prompt. Tool calls (their arguments
 * parsed into objects) and `reasoning` (the newer name of reasoning_content) are parsed so by
 * the newest trtllm-serve only: such chats are routed by the newest worker's ids, not forwarded.
 */
function idsForwardable(messages: readonly ChatMessage[]): boolean {
  return messages.every((m) => m == null || ((m.content == null || typeof m.content === 'string') && m.tool_calls == null && (m as { reasoning?: unknown }).reasoning == null));
}
