import { idListMembers } from '../../common/id-list-text';
import { LazyRecency } from '../../common/lazy-recency';
import { OldestFirst } from '../../common/oldest-first';

/** What a cached piece costs besides its text and ids: the entry, the map slot, the typed array. */
const ENTRY_OVERHEAD_BYTES = 160;

/** A piece's ids, and the same ids as JSON list members ("1,2,3"), so a list of pieces is written by joining (README "Worker body encoding"). */
export interface PieceIds {
  readonly ids: Int32Array;
  readonly json: string;
}

interface Entry extends PieceIds {
  /** The tokenizer (its directory) these ids are of. */
  readonly owner: string;
  /** The piece's text: a flat copy of its own (a slice of a prompt would keep the whole prompt alive). */
  readonly text: string;
  readonly bytes: number;
  /** Another piece under the same print (another text, or another tokenizer's ids of this one). */
  next?: Entry;
  /** When the print was last put at the back of the map (LazyRecency; the chain's head holds it). */
  stamp: number;
}

/** A piece's ids with their JSON members, for a piece the cache does not hold. */
export function pieceIds(ids: Int32Array): PieceIds {
  return { ids, json: idListMembers(ids) };
}

/** Counters of the cache since the process started (the metrics read them). */
export interface PieceCacheStats {
  hits: number;
  misses: number;
  hitTokens: number;
  missTokens: number;
  evictions: number;
  /** Prompts encoded whole because their tokenizer cannot cut them (counted per reason). */
  uncut: Map<string, number>;
}

/** Pieces under one print at most: texts made to share a print cannot make look-ups long. */
const MAX_CHAIN = 8;

/**
 * Token ids of prompt pieces, keyed by the piece's text and its tokenizer, least recently used
 * (LazyRecency) dropped first once the bytes held (text at 2 bytes a character, ids at 4 bytes
 * a token, their JSON text at a byte a character, plus a fixed overhead per entry) pass the bound.
 *
 * The map is keyed by a print of the text (its length and a few dozen of its characters), not
 * by the text: a string key would hash every character of every piece of every prompt (the
 * largest part of a cached look-up), while the print reads a few dozen and the one string
 * comparison that confirms a hit is a memory compare. Texts are stored as copies of their own.
 */
export class PieceCache {
  private readonly map = new Map<number, Entry>();
  private readonly recency = new LazyRecency();
  private readonly oldest = new OldestFirst(() => this.map.keys());
  private held = 0;
  private count = 0;
  readonly stats: PieceCacheStats = { hits: 0, misses: 0, hitTokens: 0, missTokens: 0, evictions: 0, uncut: new Map() };

  constructor(private maxBytes: number) {}

  get bytes(): number {
    return this.held;
  }

  get limitBytes(): number {
    return this.maxBytes;
  }

  get entries(): number {
    return this.count;
  }

  setLimit(maxBytes: number): void {
    this.maxBytes = maxBytes;
    this.evict();
  }

  /** The piece's ids for that tokenizer, counted as a hit or a miss. */
  get(owner: string, text: string): PieceIds | undefined {
    const key = printOf(text);
    const head = this.map.get(key);
    let e = head;
    while (e && (e.owner !== owner || e.text !== text)) e = e.next;
    if (!e || !head) {
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    this.stats.hitTokens += e.ids.length;
    // Most recently used last (lazily: see LazyRecency): the map's order is the eviction order.
    if (this.recency.due(head.stamp, this.map.size)) {
      this.map.delete(key);
      head.stamp = this.recency.next();
      this.map.set(key, head);
    }
    return e;
  }

  /** Caches a piece's ids (if they fit the bound); returns them with their JSON members either way. */
  set(owner: string, text: string, ids: Int32Array): PieceIds {
    this.stats.missTokens += ids.length;
    const piece = pieceIds(ids);
    const bytes = text.length * 2 + ids.byteLength + piece.json.length + ENTRY_OVERHEAD_BYTES;
    if (bytes > this.maxBytes) return piece;
    const key = printOf(text);
    const head = this.map.get(key);
    let chain = 0;
    for (let e = head; e; e = e.next, chain++) if (e.owner === owner && e.text === text) return e;
    if (chain >= MAX_CHAIN) return piece;
    if (head) this.map.delete(key);
    this.map.set(key, { owner, text: ownCopy(text), ...piece, bytes, next: head, stamp: this.recency.next() });
    this.held += bytes;
    this.count++;
    this.evict();
    return piece;
  }

  countUncut(reason: string): void {
    this.stats.uncut.set(reason, (this.stats.uncut.get(reason) ?? 0) + 1);
  }

  clear(): void {
    this.map.clear();
    this.oldest.reset();
    this.held = 0;
    this.count = 0;
  }

  private evict(): void {
    while (this.held > this.maxBytes) {
      const key = this.oldest.take();
      if (key === undefined) return;
      const head = this.map.get(key);
      this.map.delete(key);
      for (let e: Entry | undefined = head; e; e = e.next) {
        this.held -= e.bytes;
        this.count--;
        this.stats.evictions++;
      }
    }
  }
}

/** Characters a print reads besides the length: evenly spread, and the last few. */
const PRINT_SAMPLES = 32;
const PRINT_TAIL = 8;

/** A 30-bit print of a text: its length, about PRINT_SAMPLES characters spread over it, and its last PRINT_TAIL. */
export function printOf(text: string): number {
  const n = text.length;
  let h = n | 0;
  const step = n > PRINT_SAMPLES ? Math.floor(n / PRINT_SAMPLES) : 1;
  for (let i = 0; i < n; i += step) h = (Math.imul(h, 0x01000193) ^ text.charCodeAt(i)) | 0;
  for (let i = Math.max(0, n - PRINT_TAIL); i < n; i++) h = (Math.imul(h, 0x01000193) ^ text.charCodeAt(i)) | 0;
  // 30 bits: a small integer to V8, so a map key needs no heap number.
  return h & 0x3fffffff;
}

/**
 * A string of its own holding the text: a slice of a prompt would otherwise keep the whole
 * prompt alive as long as the cache holds it. Slicing a concatenation makes V8 flatten it into
 * a new string first (measured: 200-character slices of 5 MB texts keep only their own bytes),
 * 5x cheaper than a JSON round trip.
 */
function ownCopy(text: string): string {
  return (' ' + text).slice(1);
}

/** One cache for the process, shared by every router and tokenizer (0 bytes: off). */
let shared: PieceCache | undefined;
const limits = new Map<object, number>();

/** Registers a user's wanted size; the cache holds the largest wanted by its current users. */
export function acquirePieceCache(user: object, megabytes: number): PieceCache | undefined {
  if (megabytes <= 0) return undefined;
  limits.set(user, megabytes * 1024 * 1024);
  const limit = Math.max(...limits.values());
  if (!shared) shared = new PieceCache(limit);
  else shared.setLimit(limit);
  return shared;
}

export function releasePieceCache(user: object): void {
  if (!limits.delete(user)) return;
  if (limits.size === 0) shared?.clear();
  else shared?.setLimit(Math.max(...limits.values()));
}

/** The process' cache, for the metrics (undefined while no router uses one). */
export function sharedPieceCache(): PieceCache | undefined {
  return shared;
}
