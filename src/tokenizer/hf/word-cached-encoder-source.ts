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

// The Split pattern of Llama 3 and Qwen2/Qwen3 (GPT-4's family) as the library compiles it,
// backslashes written '~', DIGITS standing for what follows the number class ('' or '{1,3}').
const GPT4_SPLIT = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^~r~n~p{L}~p{N}]?~p{L}+|~p{N}DIGITS| ?[^~p{White_Space}~p{L}~p{N}]+[~r~n]*|~p{White_Space}*[~r~n]+|~p{White_Space}+(?!~P{White_Space})|~p{White_Space}+";

// How many digits that pattern's number token takes (1 or 3), 0 for any other pattern.
function gpt4SplitDigits(pattern) {
  if (!(pattern instanceof RegExp) || pattern.flags !== 'gu') return 0;
  const shape = pattern.source.split(String.fromCharCode(92)).join('~');
  if (shape === GPT4_SPLIT.replace('DIGITS', '')) return 1;
  if (shape === GPT4_SPLIT.replace('DIGITS', '{1,3}')) return 3;
  return 0;
}

// Code point classes as that pattern reads them: \\p{L}, \\p{N}, \\p{White_Space}, anything else.
const LETTER = 1;
const NUMBER = 2;
const SPACE = 3;
const OTHER = 4;
const LETTER_RE = /^\\p{L}$/u;
const NUMBER_RE = /^\\p{N}$/u;
const SPACE_RE = /^\\p{White_Space}$/u;
// The class of every BMP code point, from those regexes (filled by fillBmpClasses, once).
const bmpClasses = new Uint8Array(0x10000);
const astralClasses = new Map();
function classifyCodePoint(cp) {
  // A lone surrogate is a code point of its own to a 'u' regex, and in none of the classes.
  const ch = String.fromCodePoint(cp);
  return LETTER_RE.test(ch) ? LETTER : NUMBER_RE.test(ch) ? NUMBER : SPACE_RE.test(ch) ? SPACE : OTHER;
}
// All of the BMP at once (tens of milliseconds, when the first encoder is made): the scanner's
// look-up is then one load, with no test for a class not learned yet.
function fillBmpClasses() {
  if (bmpClasses[0] !== 0) return;
  for (let cp = 0xffff; cp >= 0; cp--) bmpClasses[cp] = classifyCodePoint(cp);
}
function classOf(cp) {
  if (cp < 0x10000) return bmpClasses[cp];
  let known = astralClasses.get(cp);
  if (known === undefined) {
    if (astralClasses.size >= 4096) astralClasses.clear();
    astralClasses.set(cp, (known = classifyCodePoint(cp)));
  }
  return known;
}
// The code point at i: a surrogate pair as one, a lone surrogate as itself (as a 'u' regex reads).
function codePointAt(text, i) {
  const c = text.charCodeAt(i);
  if (c < 0xd800 || c > 0xdbff || i + 1 >= text.length) return c;
  const d = text.charCodeAt(i + 1);
  return d >= 0xdc00 && d <= 0xdfff ? ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000 : c;
}
const widthOf = (cp) => (cp > 0xffff ? 2 : 1);
const isNewline = (c) => c === 10 || c === 13;
// Where the run of code points of class k starting at i ends.
function classRunEnd(text, i, k) {
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    // Not a surrogate: the character is the code point (nearly every one, in any script).
    if (c < 0xd800 || c > 0xdfff) {
      if (bmpClasses[c] !== k) break;
      i++;
      continue;
    }
    const cp = codePointAt(text, i);
    if (classOf(cp) !== k) break;
    i += widthOf(cp);
  }
  return i;
}
// The end of "'s", "'t", "'re", "'ve", "'m", "'ll" or "'d" (either case) at i, 0 when none is.
function contractionEnd(text, i) {
  // | 0x20 lower-cases an ASCII letter and maps no other character onto one. Read within the
  // text only: an out-of-range read would cost the optimised scanner its fast path.
  const n = text.length;
  const a = i + 1 < n ? text.charCodeAt(i + 1) | 0x20 : 0;
  if (a === 0x73 || a === 0x74 || a === 0x6d || a === 0x64) return i + 2;
  const b = i + 2 < n ? text.charCodeAt(i + 2) | 0x20 : 0;
  if ((a === 0x72 || a === 0x76) && b === 0x65) return i + 3;
  return a === 0x6c && b === 0x6c ? i + 3 : 0;
}

// That pattern's matches in text, left to right, as the regex finds them (its alternatives in
// order, each greedy), passed to emit as where each starts and ends: the word table reads each
// word in place, where the regex made a string of every word (a chat turn's thousand words).
function splitGpt4(text, maxDigits, emit) {
  fillBmpClasses();
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = codePointAt(text, i);
    const w = widthOf(c);
    const k = classOf(c);
    let end = c === 0x27 ? contractionEnd(text, i) : 0;
    if (end > 0) {
      // 's|'t|'re|'ve|'m|'ll|'d
    } else if (k === LETTER) {
      end = classRunEnd(text, i + w, LETTER);
    } else if (k !== NUMBER && !isNewline(c) && i + w < n && classOf(codePointAt(text, i + w)) === LETTER) {
      // [^\\r\\n\\p{L}\\p{N}]?\\p{L}+ with its first character
      end = classRunEnd(text, i + w, LETTER);
    } else if (k === NUMBER) {
      end = i + w;
      for (let taken = 1; taken < maxDigits && end < n; taken++) {
        const next = codePointAt(text, end);
        if (classOf(next) !== NUMBER) break;
        end += widthOf(next);
      }
    } else if (k === OTHER || (c === 0x20 && i + 1 < n && classOf(codePointAt(text, i + 1)) === OTHER)) {
      // " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
      end = classRunEnd(text, k === OTHER ? i : i + 1, OTHER);
      while (end < n && isNewline(text.charCodeAt(end))) end++;
    } else {
      // White space: up to its last newline (\\s*[\\r\\n]+); else all of it when the text ends
      // there or it is one character (\\s+), else all but its last (\\s+(?!\\S)).
      const runEnd = classRunEnd(text, i, SPACE);
      let last = runEnd - 1;
      while (last >= i && !isNewline(text.charCodeAt(last))) last--;
      end = last >= i ? last + 1 : runEnd === n || runEnd - i === 1 ? runEnd : runEnd - 1;
    }
    emit(i, end);
    i = end;
  }
}

// Pre-tokens' ids by the pre-token, looked up by where one sits in a text: no substring per
// word and no string hash by the engine, which a chat turn's thousand words each cost. Open
// addressing over at most capacity words; full, it starts again empty.
function wordTable(capacity) {
  const mask = (1 << Math.ceil(Math.log2(capacity * 2))) - 1;
  const slots = new Int32Array(mask + 1);
  const hashes = new Int32Array(capacity);
  let words = [];
  let ids = [];
  const hashOf = (text, start, end) => {
    let h = 0x811c9dc5 | 0;
    for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    return h;
  };
  // The entry of text's start..end, or -1 - the free slot where it would go.
  const find = (text, start, end, h) => {
    const length = end - start;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const entry = slots[slot] - 1;
      if (entry < 0) return -1 - slot;
      if (hashes[entry] !== h) continue;
      const word = words[entry];
      if (word.length !== length) continue;
      let i = 0;
      while (i < length && word.charCodeAt(i) === text.charCodeAt(start + i)) i++;
      if (i === length) return entry;
    }
  };
  return {
    get(text, start, end) {
      const entry = find(text, start, end, hashOf(text, start, end));
      return entry >= 0 ? ids[entry] : undefined;
    },
    set(word, wordIds) {
      const h = hashOf(word, 0, word.length);
      let at = find(word, 0, word.length, h);
      if (at >= 0) {
        ids[at] = wordIds;
        return;
      }
      if (words.length >= capacity) {
        slots.fill(0);
        words = [];
        ids = [];
        at = find(word, 0, word.length, h);
      }
      slots[-1 - at] = words.length + 1;
      hashes[words.length] = h;
      // A copy of its own: a slice of a prompt would keep the whole prompt alive.
      words.push(word.length >= 13 ? (' ' + word).slice(1) : word);
      ids.push(wordIds);
    },
  };
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
  const words = wordTable(WORD_CACHE_ENTRIES);
  const remember = (word, ids) => {
    if (word.length < MAX_CACHED_WORD) words.set(word, ids);
  };
  // The ids of text's characters start to end (one pre-token), computed and cached when new.
  const wordIdsAt = (text, start, end) => {
    let ids = words.get(text, start, end);
    if (ids === undefined) {
      const word = text.slice(start, end);
      remember(word, (ids = tokenizer.model(byteLevel.pre_tokenize_text(word, {})).map(idOf)));
    }
    return ids;
  };
  const encodeWord = (word) => wordIdsAt(word, 0, word.length);
  // Set while tryEncode runs: words not in the cache are listed instead of computed.
  let missing;
  // The ids of text's characters start to end (one pre-token) onto out.
  const pushWordAt = (text, start, end, out) => {
    const ids = missing !== undefined ? words.get(text, start, end) : wordIdsAt(text, start, end);
    if (ids === undefined) missing.add(text.slice(start, end));
    else for (let i = 0; i < ids.length; i++) out.push(ids[i]);
  };
  const pushWord = (word, out) => pushWordAt(word, 0, word.length, out);
  // The library's regex_split (Isolated), feeding each part to the next pattern or to the model.
  const splitInto = (text, level, out) => {
    if (level === patterns.length) return pushWord(text, out);
    if (level === 0 && gpt4Digits > 0) return splitGpt4(text, gpt4Digits, (start, end) => pushWordAt(text, start, end, out));
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
  const gpt4Digits = patterns.length === 1 ? gpt4SplitDigits(patterns[0]) : 0;
  // When the encoder is made, not on its first text.
  if (gpt4Digits > 0) fillBmpClasses();
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
