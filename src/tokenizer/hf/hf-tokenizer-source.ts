import { WORD_CACHED_ENCODER_SOURCE } from './word-cached-encoder-source';

/**
 * Loads a Hugging Face tokenizer directory with @huggingface/tokenizers the way transformers'
 * AutoTokenizer does, in plain JavaScript so the router's main thread and its tokenizer
 * threads run the very same code. Besides `tokenizer.json`, transformers' Llama, CodeLlama,
 * Gemma, Cohere and GPT-NeoX tokenizer classes rebuild the post-processor from
 * `tokenizer_config.json` (`add_bos_token`, `add_eos_token`, class defaults when absent), so a
 * DeepSeek-V3 tokenizer.json without a BOS template still gets its BOS: done here too.
 *
 * `loadHfTokenizer(req, fs, dir)` returns `{ encode(text, addSpecialTokens) -> number[],
 * encodePiece(text) -> number[], fastPieces }`: `encode` is the library's, the reference;
 * `encodePiece` encodes without special tokens, through the word-cached encoder when the
 * tokenizer has its shape (`fastPieces`), else as `encode`; `encodeFast(text, special)` too,
 * with the special tokens as the wrap two probes show (the library's encode when they differ).
 */
export const LOAD_HF_TOKENIZER_SOURCE = `
${WORD_CACHED_ENCODER_SOURCE}
// A directory's JSON file, {} for an optional one that is absent.
function readTokenizerFile(fs, dir, name, optional) {
  const file = dir + '/' + name;
  if (optional && !fs.existsSync(file)) return {};
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

// tokenizer.json and tokenizer_config.json parsed, for a caller that builds more than one thing from them.
function readTokenizerFiles(fs, dir) {
  return { json: readTokenizerFile(fs, dir, 'tokenizer.json', false), config: readTokenizerFile(fs, dir, 'tokenizer_config.json', true) };
}

// files: readTokenizerFiles' result when the caller has it (its json gets the rebuilt post-processor).
function loadHfTokenizer(req, fs, dir, files) {
  const { Tokenizer } = req('@huggingface/tokenizers');
  const { json, config } = files || readTokenizerFiles(fs, dir);
  const defaults = {
    LlamaTokenizer: [true, false], CodeLlamaTokenizer: [true, false], GemmaTokenizer: [true, false],
    CohereTokenizer: [true, false], GPTNeoXTokenizer: [false, false],
  };
  const cls = String(config.tokenizer_class || '').replace(/Fast$/, '');
  const classDefaults = defaults[cls];
  if (classDefaults) {
    const text = (t) => (t && typeof t === 'object' ? t.content : t);
    const idOf = (token) => {
      for (const added of json.added_tokens || []) if (added.content === token) return added.id;
      const vocab = json.model && json.model.vocab;
      if (Array.isArray(vocab)) return vocab.findIndex((v) => v[0] === token);
      return vocab ? vocab[token] : undefined;
    };
    const addBos = config.add_bos_token === undefined ? classDefaults[0] : Boolean(config.add_bos_token);
    const addEos = config.add_eos_token === undefined ? classDefaults[1] : Boolean(config.add_eos_token);
    const bos = text(config.bos_token);
    const eos = text(config.eos_token);
    const special = (token, typeId) => ({ SpecialToken: { id: token, type_id: typeId } });
    const single = [];
    const pair = [];
    const specials = {};
    if (addBos && bos != null && idOf(bos) !== undefined) specials[bos] = { id: bos, ids: [idOf(bos)], tokens: [bos] };
    if (addEos && eos != null && idOf(eos) !== undefined) specials[eos] = { id: eos, ids: [idOf(eos)], tokens: [eos] };
    if (specials[bos]) single.push(special(bos, 0));
    single.push({ Sequence: { id: 'A', type_id: 0 } });
    if (specials[eos]) single.push(special(eos, 0));
    pair.push(...single);
    if (specials[bos]) pair.push(special(bos, 1));
    pair.push({ Sequence: { id: 'B', type_id: 1 } });
    if (specials[eos]) pair.push(special(eos, 1));
    json.post_processor = { type: 'TemplateProcessing', single, pair, special_tokens: specials };
  }
  const tokenizer = new Tokenizer(json, config);
  const encode = (text, addSpecialTokens) => tokenizer.encode(text, { add_special_tokens: addSpecialTokens }).ids;
  const words = wordCachedEncoder(tokenizer, json);
  const fast = words && words.encode;
  const encodePiece = fast || ((text) => encode(text, false));
  const wrap = fast ? specialWrap(encode, fast) : null;
  const encodeFast = (text, addSpecialTokens) => {
    if (!addSpecialTokens) return encodePiece(text);
    if (!wrap) return encode(text, true);
    const ids = wrap.before.slice();
    for (const id of fast(text)) ids.push(id);
    for (const id of wrap.after) ids.push(id);
    return ids;
  };
  return { encode, encodePiece, encodeFast, encodeWord: words ? words.encodeWord : undefined, fastPieces: words !== null };
}

// The word encoder of a directory's tokenizer without its model (no vocabulary, no merges: a
// few MB, not the model's hundred): splits and added tokens as the full one, every word's
// ids learned from a thread that holds the model. Null for a tokenizer of another shape.
function loadHfWordEncoder(req, fs, dir, files) {
  const { Tokenizer } = req('@huggingface/tokenizers');
  const { json, config } = files || readTokenizerFiles(fs, dir);
  if (!wordEncoderShape(json)) return null;
  const modelFree = { ...json, model: { ...json.model, vocab: {}, merges: [] }, post_processor: null };
  return wordCachedEncoder(new Tokenizer(modelFree, config), json);
}

// What add_special_tokens puts around a text (BOS before, EOS after), when it is a plain wrap
// the same for two probes; null when the post-processor does more.
function specialWrap(encode, plain) {
  let wrap = null;
  for (const probe of ['a', 'Hello world']) {
    const inner = plain(probe);
    const full = encode(probe, true);
    let at = -1;
    for (let i = 0; i + inner.length <= full.length && at < 0; i++) if (inner.every((id, k) => full[i + k] === id)) at = i;
    if (at < 0) return null;
    const found = { before: full.slice(0, at), after: full.slice(at + inner.length) };
    const same = (a, b) => a.length === b.length && a.every((id, k) => id === b[k]);
    if (wrap && (!same(wrap.before, found.before) || !same(wrap.after, found.after))) return null;
    wrap = found;
  }
  return wrap;
}
`;

export interface HfEncoder {
  encode(text: string, addSpecialTokens: boolean): number[];
  encodePiece(text: string): number[];
  /** As encode, through the word-cached encoder when the tokenizer has its shape (special tokens as a probed wrap). */
  encodeFast(text: string, addSpecialTokens: boolean): number[];
  /** One pre-token's ids (the word-cached encoder's; undefined without it). */
  encodeWord?: (word: string) => number[];
  /** Whether encodePiece is the word-cached encoder. */
  fastPieces: boolean;
}

/** The model-free word encoder of a tokenizer (see loadHfWordEncoder above). */
export interface WordEncoder {
  tryEncode(text: string): { ids: number[]; missing?: undefined } | { missing: string[]; ids?: undefined };
  learn(word: string, ids: ArrayLike<number>): void;
}

/** A tokenizer directory's tokenizer.json and tokenizer_config.json ({} when absent), parsed. */
export interface TokenizerFiles {
  json: Record<string, unknown>;
  config: Record<string, unknown>;
}

type Fs = typeof import('node:fs');
type Loader = (req: NodeJS.Require, fs: Fs, dir: string, files?: TokenizerFiles) => HfEncoder;
type WordLoader = (req: NodeJS.Require, fs: Fs, dir: string, files?: TokenizerFiles) => WordEncoder | null;

const fromSource = <T>(name: string): T =>
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the one source shared with the threads
  new Function(`${LOAD_HF_TOKENIZER_SOURCE}; return ${name};`)() as T;

let loader: Loader | undefined;
let wordLoader: WordLoader | undefined;
let filesReader: ((fs: Fs, dir: string) => TokenizerFiles) | undefined;

/** The model-free word encoder loader, for the main thread. */
export function hfWordEncoderLoader(): WordLoader {
  return (wordLoader ??= fromSource<WordLoader>('loadHfWordEncoder'));
}

/** The loader above, for the main thread. */
export function hfTokenizerLoader(): Loader {
  return (loader ??= fromSource<Loader>('loadHfTokenizer'));
}

/** Reads a directory's tokenizer files once, for the loaders above and the piece cutter. */
export function hfTokenizerFilesReader(): (fs: Fs, dir: string) => TokenizerFiles {
  return (filesReader ??= fromSource<(fs: Fs, dir: string) => TokenizerFiles>('readTokenizerFiles'));
}
