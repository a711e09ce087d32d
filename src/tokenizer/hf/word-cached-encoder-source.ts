/**
 * A faster exact encode for byte-level BPE tokenizers (Llama 3, Qwen2/3, DeepSeek V3, GPT-2
 * style), in plain JavaScript so the tokenizer threads run it (see hf-tokenizer-source.ts).
 *
 * @huggingface/tokenizers spends most of an encode on per-word overhead, not on BPE merges
 * (which it caches): each pre-token is UTF-8 encoded, mapped byte by byte to the byte-level
 * alphabet, joined, merged, and the token strings are looked up again for their ids. Here the
 * whole chain is cached per raw pre-token: word -> ids. A miss runs the library's own byte
 * mapping and BPE model on that one word, so the ids are the library's by construction.
 *
 * Everything else mirrors the library's `encode_text` step for step, with its own objects:
 * the added-token splitters (and their lstrip/rstrip), the normalizer, the Split patterns
 * as the library compiled them (Isolated: gaps and matches both kept), and the id look-up
 * order (added tokens first, then the vocabulary, then unk). A tokenizer of another shape
 * gets `null` and keeps the library's encode. The differential test
 * (test/tokenizer/incremental-exactness.spec.ts) compares it with the library's for every
 * fixture tokenizer.
 *
 * `wordCachedEncoder(tokenizer, json)` returns `(text, missBudget?) -> number[] | null` (no
 * special tokens added), or null for a tokenizer of another shape. With a budget, the words
 * the cache misses may total that many characters: past it the encode stops and gives null
 * (the words done so far stay cached), so a caller that must not block long can hand the text
 * to a thread instead.
 */
export const WORD_CACHED_ENCODER_SOURCE = `
function wordCachedEncoder(tokenizer, json) {
  const WORD_CACHE_ENTRIES = 65536;
  const MAX_CACHED_WORD = 256;
  const pre = json.pre_tokenizer;
  const bpe = json.model;
  if (!pre || pre.type !== 'Sequence' || !bpe || bpe.type !== 'BPE') return null;
  if (bpe.byte_fallback || bpe.fuse_unk || bpe.dropout != null) return null;
  const steps = pre.pretokenizers || [];
  const last = steps[steps.length - 1];
  if (!last || last.type !== 'ByteLevel' || last.use_regex !== false || last.add_prefix_space) return null;
  if (steps.slice(0, -1).some((s) => s.type !== 'Split' || s.invert || s.behavior !== 'Isolated')) return null;
  const compiled = tokenizer.pre_tokenizer && tokenizer.pre_tokenizer.tokenizers;
  if (!Array.isArray(compiled) || compiled.length !== steps.length) return null;
  const patterns = compiled.slice(0, -1).map((s) => s && s.pattern);
  if (patterns.some((p) => !(p instanceof RegExp) || !p.global)) return null;
  const byteLevel = compiled[compiled.length - 1];
  if (tokenizer.remove_space === true || tokenizer.do_lowercase_and_remove_accent) return null;
  if (tokenizer.post_processor) {
    const probe = tokenizer.post_processor(['a', 'b'], null, false);
    if (!probe || !probe.tokens || probe.tokens.length !== 2 || probe.tokens[0] !== 'a' || probe.tokens[1] !== 'b') return null;
  }
  const added = tokenizer.added_tokens_map;
  const vocab = tokenizer.model.tokens_to_ids;
  const unk = tokenizer.model.unk_token_id;
  const normalizer = tokenizer.normalizer;
  const idOf = (token) => {
    const a = added.get(token);
    return a !== undefined ? a.id : (vocab.get(token) ?? unk);
  };
  const words = new Map();
  const OVER_BUDGET = {};
  let budget = Infinity;
  const pushWord = (word, out) => {
    let ids = words.get(word);
    if (ids === undefined) {
      if ((budget -= word.length) < 0) throw OVER_BUDGET;
      ids = tokenizer.model(byteLevel.pre_tokenize_text(word, {})).map(idOf);
      if (word.length < MAX_CACHED_WORD) {
        if (words.size >= WORD_CACHE_ENTRIES) words.clear();
        words.set(word, ids);
      }
    }
    for (let i = 0; i < ids.length; i++) out.push(ids[i]);
  };
  // The library's regex_split (Isolated), feeding each part to the next pattern or to the model.
  const splitInto = (text, level, out) => {
    if (level === patterns.length) return pushWord(text, out);
    let prev = 0;
    for (const match of text.matchAll(patterns[level])) {
      const whole = match[0];
      if (prev < match.index) splitInto(text.slice(prev, match.index), level + 1, out);
      if (whole.length > 0) splitInto(whole, level + 1, out);
      prev = match.index + whole.length;
    }
    if (prev < text.length) splitInto(text.slice(prev), level + 1, out);
  };
  // The lstrip/rstrip of added tokens on their neighbours, as the library applies them.
  const stripAround = (sections) => {
    sections.forEach((section, i) => {
      const token = added.get(section);
      if (!token) return;
      if (token.lstrip && i > 0) sections[i - 1] = sections[i - 1].trimEnd();
      if (token.rstrip && i < sections.length - 1) sections[i + 1] = sections[i + 1].trimStart();
    });
    return sections;
  };
  const encode = (text) => {
    const out = [];
    for (let section of stripAround(tokenizer.splitter_unnormalized.split(text))) {
      if (section.length === 0) continue;
      if (added.has(section)) {
        out.push(idOf(section));
        continue;
      }
      if (normalizer !== null && normalizer !== undefined) section = normalizer(section);
      if (section.length === 0) continue;
      for (const part of stripAround(tokenizer.splitter_normalized.split(section))) {
        if (part.length === 0) continue;
        if (added.has(part)) out.push(idOf(part));
        else splitInto(part, 0, out);
      }
    }
    return out;
  };
  return (text, missBudget) => {
    budget = missBudget === undefined ? Infinity : missBudget;
    try {
      return encode(text);
    } catch (e) {
      if (e === OVER_BUDGET) return null;
      throw e;
    }
  };
}
`;
