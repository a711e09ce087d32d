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
 * tokenizer has its shape (`fastPieces`), else as `encode`.
 */
export const LOAD_HF_TOKENIZER_SOURCE = `
${WORD_CACHED_ENCODER_SOURCE}
function loadHfTokenizer(req, fs, dir) {
  const { Tokenizer } = req('@huggingface/tokenizers');
  const read = (name, optional) => {
    const file = dir + '/' + name;
    if (optional && !fs.existsSync(file)) return {};
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  };
  const json = read('tokenizer.json', false);
  const config = read('tokenizer_config.json', true);
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
  const fast = wordCachedEncoder(tokenizer, json);
  return { encode, encodePiece: fast || ((text) => encode(text, false)), fastPieces: fast !== null };
}
`;

export interface HfEncoder {
  encode(text: string, addSpecialTokens: boolean): number[];
  encodePiece(text: string): number[];
  /** Whether encodePiece is the word-cached encoder. */
  fastPieces: boolean;
}

type Loader = (req: NodeJS.Require, fs: typeof import('node:fs'), dir: string) => HfEncoder;

let loader: Loader | undefined;

/** The loader above, for the main thread. */
export function hfTokenizerLoader(): Loader {
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the one source shared with the threads
  loader ??= new Function(`${LOAD_HF_TOKENIZER_SOURCE}; return loadHfTokenizer;`)() as Loader;
  return loader;
}
