import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Characters per token that no prompt averages above: a text longer than the model's maximum
 * number of tokens times this cannot fit the model, so tokenizing it (seconds of a tokenizer
 * thread for megabytes) would only hold up other requests. Such a prompt is routed by load.
 */
export const MAX_CHARS_PER_TOKEN = 16;
/** A model whose files name no usable maximum: 128k tokens. */
const DEFAULT_MAX_TOKENS = 131_072;
/** `model_max_length` is often a placeholder (1e30): only values below this are taken as real. */
const PLAUSIBLE_MAX_TOKENS = 10_000_000;

const byDir = new Map<string, number>();

/** The longest prompt text (characters) worth tokenizing for the model of a tokenizer directory. */
export function maxPromptChars(dir: string | undefined): number {
  if (dir === undefined) return DEFAULT_MAX_TOKENS * MAX_CHARS_PER_TOKEN;
  let chars = byDir.get(dir);
  if (chars === undefined) {
    chars = (modelMaxTokens(dir) ?? DEFAULT_MAX_TOKENS) * MAX_CHARS_PER_TOKEN;
    byDir.set(dir, chars);
  }
  return chars;
}

/** tokenizer_config.json's `model_max_length`, else config.json's `max_position_embeddings`, when plausible. */
function modelMaxTokens(dir: string): number | undefined {
  const read = (file: string, key: string): number | undefined => {
    try {
      const value = (JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Record<string, unknown>)[key];
      return typeof value === 'number' && value > 0 && value < PLAUSIBLE_MAX_TOKENS ? value : undefined;
    } catch {
      return undefined;
    }
  };
  return read('tokenizer_config.json', 'model_max_length') ?? read('config.json', 'max_position_embeddings');
}

/**
 * Whether the strings in a value (a request's messages, tools, documents: keys and values)
 * add up to more than `limit` characters. Stops as soon as they do, so a huge body costs no
 * more than the limit to look at.
 */
export function exceedsChars(value: unknown, limit: number): boolean {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') total += v.length;
    else if (Array.isArray(v)) for (const item of v) stack.push(item);
    else if (typeof v === 'object' && v !== null) {
      for (const [k, item] of Object.entries(v)) {
        total += k.length;
        stack.push(item);
      }
    }
    if (total > limit) return true;
  }
  return false;
}
