import { isRecord } from '../../common/is-record';

/**
 * Whether a tokenizer may cut plain text into pieces encoded apart, and where. The one cut
 * used is before a space that sits between two ASCII letters ("word| word"): every pre-tokenizer
 * regex accepted below ends a match at such a space and starts the next one there, whatever
 * surrounds it, because
 * - no alternative matches a letter followed by a space (letter runs stop at the space; the
 *   optional one-character prefix comes before the letters; punctuation, digit and whitespace
 *   alternatives match no ASCII letter), so a match ends right before the space;
 * - the regexes look ahead at most (never behind), so the match that starts at the space is
 *   the same in the whole text and in the text cut there.
 * The normalizers accepted (none, NFC) never join characters across a space, and ByteLevel
 * without a prefix space maps each pre-token to bytes on its own; the BPE model then encodes
 * pre-tokens one by one. Anything else (Metaspace or a prepended `▁`, which depend on a
 * section's position; whole-section BPE without a pre-tokenizer; other regexes) gets no text cut.
 */

/** Pre-tokenizer split regexes proven above (as tokenizer.json writes them). */
const SAFE_SPLIT_REGEXES: ReadonlySet<string> = new Set([
  // Llama 3 (cl100k-style): digits in runs of 1 to 3.
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  // Qwen2 / Qwen3: single digits.
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  // DeepSeek V3: digit runs, CJK runs, then words and punctuation.
  '\\p{N}{1,3}',
  '[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+',
  "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
]);

type Json = Record<string, unknown> | null | undefined;

function safeNormalizer(n: Json): boolean {
  if (n == null) return true;
  if (n.type === 'NFC') return true;
  if (n.type === 'Sequence' && Array.isArray(n.normalizers)) return n.normalizers.every((x) => isRecord(x) && safeNormalizer(x));
  return false;
}

function safePreTokenizer(p: Json): boolean {
  if (!isRecord(p)) return false;
  if (p.type === 'ByteLevel') return p.add_prefix_space === false && p.use_regex === false;
  if (p.type === 'Split') {
    const pattern = p.pattern as Json;
    return p.behavior === 'Isolated' && p.invert === false && isRecord(pattern) && typeof pattern.Regex === 'string' && SAFE_SPLIT_REGEXES.has(pattern.Regex);
  }
  if (p.type === 'Sequence' && Array.isArray(p.pretokenizers) && p.pretokenizers.length > 0) {
    const steps = p.pretokenizers as Json[];
    // The byte mapping must come last, after the splits.
    const last = steps[steps.length - 1];
    return isRecord(last) && last.type === 'ByteLevel' && steps.every((s) => safePreTokenizer(s));
  }
  return false;
}

/**
 * Why a tokenizer cannot cut plain text, or undefined when it can (see above). `config` is
 * tokenizer_config.json: its `remove_space` and lowercasing act on a whole section.
 */
export function textCutProblem(tokenizer: Record<string, unknown>, config: Record<string, unknown>): string | undefined {
  if (config.remove_space === true || config.do_lowercase_and_remove_accent === true) return 'section-wide config';
  if (!safeNormalizer(tokenizer.normalizer as Json)) return 'normalizer';
  if (!safePreTokenizer(tokenizer.pre_tokenizer as Json)) return 'pre_tokenizer';
  const model = tokenizer.model as Json;
  if (!isRecord(model) || model.type !== 'BPE') return 'model';
  return undefined;
}

const isAsciiLetter = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/** Cut positions in text[from, to): before a space between ASCII letters, pieces at least `minPiece` long. */
export function textCuts(text: string, from: number, to: number, minPiece: number, out: number[]): void {
  let at = from + minPiece;
  while (at < to - 1) {
    const space = text.indexOf(' ', at);
    if (space < 0 || space >= to - 1) return;
    if (isAsciiLetter(text.charCodeAt(space - 1)) && isAsciiLetter(text.charCodeAt(space + 1))) {
      out.push(space);
      at = space + minPiece;
    } else {
      at = space + 1;
    }
  }
}
