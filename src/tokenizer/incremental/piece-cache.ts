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
  readonly bytes: number;
  /** Another tokenizer's ids of the same text. */
  other?: Entry;
}

/** A piece's ids with their JSON members, for a piece the cache does not hold. */
export function pieceIds(ids: Int32Array): PieceIds {
  return { ids, json: ids.join(',') };
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

/**
 * Token ids of prompt pieces, keyed by the piece's text and its tokenizer, least recently used
 * dropped first once the bytes held (text at 2 bytes a character, ids at 4 bytes a token, their
 * JSON text at a byte a character, plus a fixed overhead per entry) pass the bound. Texts are stored as copies of their own, so a key
 * never keeps the whole prompt it was cut from alive.
 */
export class PieceCache {
  private readonly map = new Map<string, Entry>();
  private held = 0;
  readonly stats: PieceCacheStats = { hits: 0, misses: 0, hitTokens: 0, missTokens: 0, evictions: 0, uncut: new Map() };

  constructor(private maxBytes: number) {}

  get bytes(): number {
    return this.held;
  }

  get limitBytes(): number {
    return this.maxBytes;
  }

  get entries(): number {
    return this.map.size;
  }

  setLimit(maxBytes: number): void {
    this.maxBytes = maxBytes;
    this.evict();
  }

  /** The piece's ids for that tokenizer, counted as a hit or a miss. */
  get(owner: string, text: string): PieceIds | undefined {
    const head = this.map.get(text);
    let e = head;
    while (e && e.owner !== owner) e = e.other;
    if (!e || !head) {
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    this.stats.hitTokens += e.ids.length;
    // Most recently used last: the map's order is the eviction order.
    this.map.delete(text);
    this.map.set(text, head);
    return e;
  }

  /** Caches a piece's ids (if they fit the bound); returns them with their JSON members either way. */
  set(owner: string, text: string, ids: Int32Array): PieceIds {
    this.stats.missTokens += ids.length;
    const piece = pieceIds(ids);
    const bytes = text.length * 2 + ids.byteLength + piece.json.length + ENTRY_OVERHEAD_BYTES;
    if (bytes > this.maxBytes) return piece;
    const head = this.map.get(text);
    for (let e = head; e; e = e.other) if (e.owner === owner) return e;
    const key = head ? (this.map.delete(text), text) : ownCopy(text);
    this.map.set(key, { owner, ...piece, bytes, other: head });
    this.held += bytes;
    this.evict();
    return piece;
  }

  countUncut(reason: string): void {
    this.stats.uncut.set(reason, (this.stats.uncut.get(reason) ?? 0) + 1);
  }

  clear(): void {
    this.map.clear();
    this.held = 0;
  }

  private evict(): void {
    for (const [key, head] of this.map) {
      if (this.held <= this.maxBytes) return;
      this.map.delete(key);
      for (let e: Entry | undefined = head; e; e = e.other) {
        this.held -= e.bytes;
        this.stats.evictions++;
      }
    }
  }
}

/**
 * A flat copy of a string: a slice of a prompt would otherwise keep the whole prompt alive as
 * long as the cache holds the key. JSON round-trips keep lone surrogates as they are.
 */
function ownCopy(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
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
