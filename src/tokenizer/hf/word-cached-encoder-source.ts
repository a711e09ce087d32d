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
 * `wordCachedEncoder(tokenizer, json)` returns null for a tokenizer of another shape, else
 * - `encode(text) -> number[]`: the ids, no special tokens added;
 * - `encodeWord(word) -> number[]`: one pre-token's ids (cached);
 * - `tryEncode(text) -> { ids } | { missing }`: the ids from cached words only, or the words
 *   the cache lacks (each once), computing nothing: a caller holding no model (the event loop,
 *   see prompt-tokenizer.ts) asks a thread for those words, `learn`s them and tries again;
 * - `learn(word, ids)`: caches a word's ids computed elsewhere.
 */
export const WORD_CACHED_ENCODER_SOURCE = `
// Whether tokenizer.json describes a byte-level BPE this encoder takes (checked before loading).
function wordEncoderShape(json) {
  const pre = json.pre_tokenizer;
  const bpe = json.model;
  if (!pre || pre.type !== 'Sequence' || !bpe || bpe.type !== 'BPE') return false;
  if (bpe.byte_fallback || bpe.fuse_unk || bpe.dropout != null) return false;
  const steps = pre.pretokenizers || [];
  const last = steps[steps.length - 1];
  if (!last || last.type !== 'ByteLevel' || last.use_regex !== false || last.add_prefix_space) return false;
  return steps.slice(0, -1).every((s) => s.type === 'Split' && !s.invert && s.behavior === 'Isolated');
}

function wordCachedEncoder(tokenizer, json) {
  const WORD_CACHE_ENTRIES = 65536;
  const MAX_CACHED_WORD = 256;
  if (!wordEncoderShape(json)) return null;
  const steps = json.pre_tokenizer.pretokenizers;
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
  const remember = (word, ids) => {
    if (word.length >= MAX_CACHED_WORD) return;
    if (words.size >= WORD_CACHE_ENTRIES) words.clear();
    words.set(word, ids);
  };
  const encodeWord = (word) => {
    let ids = words.get(word);
    if (ids === undefined) remember(word, (ids = tokenizer.model(byteLevel.pre_tokenize_text(word, {})).map(idOf)));
    return ids;
  };
  // Set while tryEncode runs: words not in the cache are listed instead of computed.
  let missing;
  const pushWord = (word, out) => {
    if (missing !== undefined) {
      const ids = words.get(word);
      if (ids === undefined) missing.add(word);
      else for (let i = 0; i < ids.length; i++) out.push(ids[i]);
      return;
    }
    const ids = encodeWord(word);
    for (let i = 0; i < ids.length; i++) out.push(ids[i]);
  };
  // The library's regex_split (Isolated), feeding each part to the next pattern or to the model.
  const splitInto = (text, level, out) => {
    if (level === patterns.length) return pushWord(text, out);
    // Matches as plain strings (no match object per word): when they add up to the whole text
    // they are contiguous, so there are no gaps between them to pass on.
    const parts = text.match(patterns[level]);
    if (parts !== null) {
      let covered = 0;
      for (let i = 0; i < parts.length; i++) covered += parts[i].length;
      if (covered === text.length) {
        for (let i = 0; i < parts.length; i++) if (parts[i].length > 0) splitInto(parts[i], level + 1, out);
        return;
      }
    }
    let prev = 0;
    for (const match of text.matchAll(patterns[level])) {
      const whole = match[0];
      if (prev < match.index) splitInto(text.slice(prev, match.index), level + 1, out);
      if (whole.length > 0) splitInto(whole, level + 1, out);
      prev = match.index + whole.length;
    }
    if (prev < text.length) splitInto(text.slice(prev), level + 1, out);
  };
  // The library's DictionarySplitter.split (the longest added token at the leftmost place it
  // starts), but jumping with a regex to the characters an added token can start with instead of
  // walking the trie from every character: that walk made a one-character string per character
  // and was a tenth of a chat turn's CPU. Its trie is read, so the dictionary is the library's.
  const addedTokenSplit = (splitter) => {
    const trie = splitter && splitter.trie;
    if (!trie || typeof trie !== 'object') return (text) => splitter.split(text);
    const firsts = Object.keys(trie).filter((key) => key.length === 1);
    if (firsts.length === 0) return (text) => (text.length > 0 ? [text] : []);
    const unit = (c) => '\\\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');
    const starts = new RegExp('[' + firsts.map(unit).join('') + ']', 'g');
    // One first character (chat models' '<'): indexOf, no match object per hit.
    const only = firsts.length === 1 ? firsts[0] : undefined;
    const nextStart = (text, from) => {
      if (only !== undefined) return text.indexOf(only, from);
      starts.lastIndex = from;
      const found = starts.exec(text);
      return found === null ? -1 : found.index;
    };
    return (text) => {
      const result = [];
      const n = text.length;
      let start = 0;
      let i = 0;
      for (;;) {
        i = nextStart(text, i);
        if (i < 0) break;
        let node = trie;
        let match = null;
        for (let j = i; j < n && (node = node[text[j]]); j++) if (node.end) match = node.end;
        if (match) {
          if (i > start) result.push(text.slice(start, i));
          result.push(match);
          i += match.length;
          start = i;
        } else i++;
      }
      if (start < n) result.push(text.slice(start));
      return result;
    };
  };
  const splitUnnormalized = addedTokenSplit(tokenizer.splitter_unnormalized);
  const splitNormalized = addedTokenSplit(tokenizer.splitter_normalized);
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
    for (let section of stripAround(splitUnnormalized(text))) {
      if (section.length === 0) continue;
      if (added.has(section)) {
        out.push(idOf(section));
        continue;
      }
      if (normalizer !== null && normalizer !== undefined) section = normalizer(section);
      if (section.length === 0) continue;
      for (const part of stripAround(splitNormalized(section))) {
        if (part.length === 0) continue;
        if (added.has(part)) out.push(idOf(part));
        else splitInto(part, 0, out);
      }
    }
    return out;
  };
  const tryEncode = (text) => {
    missing = new Set();
    try {
      const ids = encode(text);
      return missing.size === 0 ? { ids } : { missing: [...missing] };
    } finally {
      missing = undefined;
    }
  };
  return { encode, encodeWord, tryEncode, learn: remember };
}
`;
