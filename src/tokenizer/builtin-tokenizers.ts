import { ByteTokenizer } from './byte-tokenizer';
import { Qwen3Tokenizer } from './qwen3-tokenizer';
import type { TextTokenizer } from './text-tokenizer';

export const DEFAULT_TOKENIZER = 'qwen3';
export const TOKENIZER_NAMES = ['qwen3', 'bytes'] as const;
export type TokenizerName = (typeof TOKENIZER_NAMES)[number];

const factories: Record<TokenizerName, () => TextTokenizer> = {
  qwen3: () => new Qwen3Tokenizer(),
  bytes: () => new ByteTokenizer(),
};

const cache = new Map<string, TextTokenizer>();

export function isTokenizerName(name: string): name is TokenizerName {
  return (TOKENIZER_NAMES as readonly string[]).includes(name);
}

/** The tokenizer of that name, loaded on first use and cached for the process. */
export function getTokenizer(name: string = DEFAULT_TOKENIZER): TextTokenizer {
  const cached = cache.get(name);
  if (cached) return cached;
  if (!isTokenizerName(name)) {
    throw new Error(`unknown tokenizer "${name}" (known: ${TOKENIZER_NAMES.join(', ')})`);
  }
  const tokenizer = factories[name]();
  cache.set(name, tokenizer);
  return tokenizer;
}
