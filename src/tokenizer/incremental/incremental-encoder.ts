import { IdListJson, MIN_SPLICED_IDS, rememberIdListJson } from '../../common/id-list-text';
import { TokenIdArray, type TokenIds } from '../../common/token-id-array';
import type { PieceCache, PieceIds } from './piece-cache';
import type { PieceCutter } from './piece-cutter';

/** A tokenizer as the incremental encoder drives it (on this thread, on worker threads, native). */
export interface PieceEncoder {
  /** A whole text's ids, special tokens added or not (the uncached encode). */
  encode(text: string, addSpecialTokens: boolean): Promise<number[]> | number[];
  /** Each text's ids, encoded alone without special tokens. */
  encodePieces(texts: string[]): Promise<Int32Array[]> | Int32Array[];
}

/** What `add_special_tokens` adds around a text's ids (BOS before, EOS after...). */
interface SpecialWrap {
  before: number[];
  after: number[];
}

/** Probes whose ids must sit unchanged inside their ids with special tokens. */
const WRAP_PROBES = ['a', 'Hello world'];

/**
 * Exact incremental encoding: the text is cut where the tokenizer cannot join tokens across
 * the cut (PieceCutter), known pieces come from the cache, the others are encoded together in
 * one call and cached, and the special tokens are put around the whole. The ids are those of
 * the uncached encode of the whole text (the differential test checks it for every fixture
 * tokenizer). A tokenizer whose special tokens are not a plain wrap (a post-processor that
 * does more) gets the uncached encode for texts that ask for them. The ids come with their JSON
 * text joined from the pieces' (README "Worker body encoding"), so a worker body carrying them
 * splices that text instead of writing thousands of numbers again.
 */
export class IncrementalEncoder {
  private wrap?: Promise<SpecialWrap | null>;

  constructor(
    private readonly owner: string,
    private readonly cutter: PieceCutter,
    private readonly cache: PieceCache,
    private readonly encoder: PieceEncoder,
  ) {}

  async encode(text: string, addSpecialTokens: boolean): Promise<TokenIds> {
    const wrap = addSpecialTokens ? await (this.wrap ??= this.probeWrap()) : undefined;
    if (wrap === null) {
      this.cache.countUncut('post_processor');
      return this.encoder.encode(text, true);
    }
    const pieces = this.cutter.cut(text);
    if (this.cutter.textProblem !== undefined && longestPiece(pieces) >= 2 * this.cutter.minPiece) this.cache.countUncut(this.cutter.textProblem);
    const found: (PieceIds | undefined)[] = new Array(pieces.length);
    let missing: number[] | undefined;
    for (let i = 0; i < pieces.length; i++) {
      found[i] = this.cache.get(this.owner, pieces[i]);
      if (!found[i]) (missing ??= []).push(i);
    }
    if (missing) {
      const encoded = await this.encoder.encodePieces(missing.map((i) => pieces[i]));
      missing.forEach((at, k) => (found[at] = this.cache.set(this.owner, pieces[at], encoded[k])));
    }
    return joinPieces(found as PieceIds[], wrap);
  }

  private async probeWrap(): Promise<SpecialWrap | null> {
    let wrap: SpecialWrap | null = null;
    for (const probe of WRAP_PROBES) {
      const [plain, full] = await Promise.all([this.encoder.encode(probe, false), this.encoder.encode(probe, true)]);
      const at = indexOfRun(full, plain);
      if (at < 0) return null;
      const found = { before: full.slice(0, at), after: full.slice(at + plain.length) };
      if (wrap && (!sameIds(wrap.before, found.before) || !sameIds(wrap.after, found.after))) return null;
      wrap = found;
    }
    return wrap;
  }
}

/**
 * The pieces' ids in one TokenIdArray (native copies, off the JS heap), its JSON (theirs,
 * joined when written) remembered with it; a list too short to splice is a plain JS array.
 */
function joinPieces(found: readonly PieceIds[], wrap: SpecialWrap | undefined): TokenIds {
  const before = wrap?.before ?? [];
  const after = wrap?.after ?? [];
  let total = before.length + after.length;
  for (const piece of found) total += piece.ids.length;
  const ids = new TokenIdArray(total);
  ids.set(before, 0);
  let n = before.length;
  const members: string[] = before.length ? [before.join(',')] : [];
  for (const { ids: part, json } of found) {
    if (part.length === 0) continue;
    ids.set(part, n);
    n += part.length;
    members.push(json);
  }
  ids.set(after, n);
  if (after.length) members.push(after.join(','));
  if (total < MIN_SPLICED_IDS) return Array.from(ids);
  rememberIdListJson(ids, IdListJson.ofMembers(members));
  return ids;
}

function longestPiece(pieces: string[]): number {
  let n = 0;
  for (const p of pieces) if (p.length > n) n = p.length;
  return n;
}

function indexOfRun(haystack: readonly number[], run: readonly number[]): number {
  outer: for (let i = 0; i + run.length <= haystack.length; i++) {
    for (let j = 0; j < run.length; j++) if (haystack[i + j] !== run[j]) continue outer;
    return i;
  }
  return -1;
}

const sameIds = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
