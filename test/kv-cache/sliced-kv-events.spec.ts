import { describe, expect, it } from '@jest/globals';
import { parseKvEvents } from '../../src/kv-cache/kv-events';
import { parseKvEventsFast } from '../../src/kv-cache/fast-kv-events';
import { MAX_WINDOW_CHARS, PARSE_SLICE_CHARS, SLICED_PARSE_FROM_CHARS, parseKvEventsInSlices, type KvEventsText } from '../../src/kv-cache/sliced-kv-events';

/** A seeded generator: the drains are the same on every run. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    return s / 2 ** 32;
  };
}

const MAX_HASH = 2n ** 64n - 1n;

/** Drains written by hand (not JSON.stringify): bare 64-bit digits, odd spacing, both layouts. */
class DrainWriter {
  private id = 1;
  constructor(private readonly rnd: () => number) {}

  hash(): string {
    const r = this.rnd();
    if (r < 0.05) return MAX_HASH.toString();
    if (r < 0.1) return String(Math.floor(this.rnd() * 1000));
    return ((BigInt(Math.floor(this.rnd() * 2 ** 32)) << 32n) | BigInt(Math.floor(this.rnd() * 2 ** 32))).toString();
  }

  /** Spacing between tokens: none, spaces, or newlines and tabs. */
  ws(): string {
    const r = this.rnd();
    return r < 0.7 ? '' : r < 0.85 ? ' ' : '\n\t ';
  }

  block(i: number): string {
    const tokens = Array.from({ length: i % 3 }, (_, t) => `{"type":"unique_token","token_id":${i + t},"token_extra_id":0}`);
    const hash = this.rnd() < 0.02 ? '"00ffab"' : this.hash();
    // A string holding JSON-like text: a cut must never fall inside it.
    const mm = i % 97 === 0 ? `,"mm_keys":["],[{\\"block_hash\\":5}, \\\\"]` : '';
    return `{"type":"stored_block",${this.ws()}"block_hash":${this.ws()}${hash},"tokens":[${tokens.join(',')}],"lora_id":null,"cache_level":0,"priority":${i % 5}${mm}}`;
  }

  stored(blocks: number, wrapped = this.rnd() < 0.8): string {
    const list = Array.from({ length: blocks }, (_, i) => this.block(i)).join(`,${this.ws()}`);
    const parent = this.rnd() < 0.5 ? 'null' : this.hash();
    const data = `"type":"stored","parent_hash":${parent},"blocks":[${this.ws()}${list}${this.ws()}]`;
    return wrapped
      ? `{"event_id":${this.id++},${this.ws()}"data":{${data}},"window_size":32,"hash_algo":"v1_block_key"}`
      : `{"event_id":${this.id++},${data},"window_size":32}`;
  }

  removed(count: number, hex = false): string {
    const list = Array.from({ length: count }, () => (hex ? `"${Math.floor(this.rnd() * 1e9).toString(16)}"` : this.hash())).join(`,${this.ws()}`);
    return `{"event_id":${this.id++},"data":{"type":"removed","block_hashes":[${this.ws()}${list}${this.ws()}]${hex ? ',"hash_algo":"v2_sha256"' : ''}}}`;
  }

  small(): string {
    const r = this.rnd();
    if (r < 0.2) return `{"event_id":${this.id++},"data":{"type":"created","num_blocks_per_cache_level":[4096,0]}}`;
    if (r < 0.4) return `{"event_id":${this.id++},"data":{"type":"updated","block_hash":${this.hash()},"cache_level":{"old_value":0,"new_value":1},"priority":null}}`;
    if (r < 0.43) return `{"event_id":${this.id++},"data":{"type":"future_kind","x":[1,2]}}`;
    if (r < 0.45) return `{"event_id":${this.id++},"data":{"type":"cleared"},"attention_dp_rank":null}`;
    if (r < 0.7) return this.removed(1 + Math.floor(this.rnd() * 20));
    return this.stored(1 + Math.floor(this.rnd() * 40));
  }

  drain(parts: string[]): string {
    return `${this.ws()}[${this.ws()}${parts.join(`,${this.ws()}`)}${this.ws()}]${this.ws()}`;
  }
}

type Outcome = { events: unknown } | { error: string };

async function outcome(parse: () => unknown): Promise<Outcome> {
  try {
    return { events: await parse() };
  } catch (err) {
    return { error: `${(err as Error).name}: ${(err as Error).message}` };
  }
}

/**
 * The sliced parse answers as the fast and the lossless parsers do (events or the same error);
 * with a repeated key only as the fast one (JSON.parse keeps the last, the lossless parser refuses).
 */
async function expectAllAgree(text: string, repeatedKey = false): Promise<Outcome> {
  expect(text.length).toBeGreaterThanOrEqual(SLICED_PARSE_FROM_CHARS);
  const sliced = await outcome(() => parseKvEventsInSlices(text));
  expect(sliced).toEqual(await outcome(() => parseKvEventsFast(text)));
  if (!repeatedKey) expect(sliced).toEqual(await outcome(() => parseKvEvents(text)));
  // The same text arriving in pieces.
  expect(await outcome(() => parseKvEventsInSlices(new PieceSource(text, random(text.length))))).toEqual(sliced);
  return sliced;
}

/** `text` with `insert` after the `n`th occurrence of `needle`. */
function afterNth(text: string, needle: string, n: number, insert: string): string {
  let at = -1;
  for (let i = 0; i < n; i++) at = text.indexOf(needle, at + 1);
  const end = at + needle.length;
  return `${text.slice(0, end)}${insert}${text.slice(end)}`;
}

const blocksFor = (chars: number): number => Math.ceil(chars / 90);

describe('the sliced parse of a large drain', () => {
  it('equals the fast and the lossless parse: huge stored and removed events cut across slices, many small ones, odd spacing', async () => {
    for (const seed of [1, 2, 3]) {
      const w = new DrainWriter(random(seed));
      const parts = [w.small(), w.stored(blocksFor(3.5 * PARSE_SLICE_CHARS)), w.small(), w.removed(3 * PARSE_SLICE_CHARS / 10)];
      parts.push(w.removed(PARSE_SLICE_CHARS / 5, true), w.stored(blocksFor(1.5 * PARSE_SLICE_CHARS), false));
      for (let i = 0; i < 600; i++) parts.push(w.small());
      const text = w.drain(parts);
      const result = await expectAllAgree(text);
      const events = (result as { events: Array<{ data: { type: string; blocks?: unknown[]; block_hashes?: unknown[] } }> }).events;
      expect(events).toHaveLength(parts.length);
      expect(events[1].data.blocks).toHaveLength(blocksFor(3.5 * PARSE_SLICE_CHARS));
      expect(events[3].data.block_hashes).toContain(MAX_HASH);
    }
  });

  it('falls back exactly as the fast parse does on anything unexpected', async () => {
    const w = new DrainWriter(random(7));
    const big = (): string => w.stored(blocksFor(2.5 * PARSE_SLICE_CHARS), true);
    const filler = Array.from({ length: 200 }, () => w.small());
    const hashes = (n: number): string => Array.from({ length: n }, () => w.hash()).join(',');
    const bigList = `[${hashes(PARSE_SLICE_CHARS / 10)}`;
    const odd: Record<string, string> = {
      'truncated inside a huge event': w.drain([big(), ...filler]).slice(0, 100_000 + SLICED_PARSE_FROM_CHARS),
      'trailing garbage': `${w.drain([big(), ...filler])} x`,
      'a missing comma between events': w.drain([big(), ...filler]).replace('},{"event_id"', '} {"event_id"'),
      'a block that is not an object': w.drain([big().replace('{"type":"stored_block"', '7'), ...filler]),
      'a negative and a fractional hash': w.drain([big().replace(/"block_hash":\d+/, '"block_hash":-5'), ...filler]),
      'a fractional hash deep in a cut array': w.drain([afterNth(big(), '"block_hash":', 3000, '0.'), ...filler]),
      'a removed list of digits and one hex hash': w.drain([`{"event_id":1,"data":{"type":"removed","block_hashes":${bigList},"00ff",${hashes(PARSE_SLICE_CHARS / 10)}]}}`, ...filler]),
      'a removed list with one unsafe number out of the rewrite': w.drain([`{"event_id":1,"data":{"type":"removed","block_hashes":${bigList},1e3]}}`, ...filler]),
      'a repeated blocks key, the cut one first': w.drain([big().replace('},"window_size"', ',"blocks":[{"block_hash":9}]},"window_size"'), ...filler]),
      'blocks repeated, the cut one last': w.drain([big().replace('"type":"stored",', '"type":"stored","blocks":[],'), ...filler]),
      'blocks both in data and beside it': w.drain([big().replace('"window_size":32', `"blocks":[${Array.from({ length: 3000 }, (_, i) => w.block(i)).join(',')}],"window_size":32`), ...filler]),
      'a cut array under the wrong type': w.drain([big().replace('"type":"stored"', '"type":"removed"'), ...filler]),
      'an escaped key': w.drain([big().replace('"blocks"', '"bl\\u006fcks"'), ...filler]),
      'not an array': `{"events":${w.drain([big()])}}`,
      'an empty drain, padded': `[${' '.repeat(SLICED_PARSE_FROM_CHARS)}]`,
    };
    for (const [name, text] of Object.entries(odd)) {
      const result = await expectAllAgree(text, name.includes('repeated')).catch((err: Error) => {
        throw new Error(`${name}: ${err.message}`);
      });
      if (name.startsWith('truncated') || name.startsWith('trailing')) expect('error' in result).toBe(true);
    }
  });

  it('turns the event loop while it parses, and not for a small drain', async () => {
    const w = new DrainWriter(random(11));
    const count = async (text: string): Promise<number> => {
      let turns = 0;
      let parsing = true;
      const tick = (): void => {
        if (!parsing) return;
        turns++;
        setImmediate(tick);
      };
      setImmediate(tick);
      await parseKvEventsInSlices(text);
      parsing = false;
      return turns;
    };
    const large = w.drain([w.stored(blocksFor(8 * PARSE_SLICE_CHARS)), ...Array.from({ length: 400 }, () => w.small())]);
    expect(await count(large)).toBeGreaterThan(8);
    expect(await count(w.drain([w.small()]))).toBe(0);
  });
});

/** `text` given in pieces of random sizes (some a few characters), counting what the parse asked for. */
class PieceSource implements KvEventsText {
  given = 0;
  wholeCalls = 0;
  private at = 0;
  constructor(
    private readonly text: string,
    private readonly rnd: () => number,
    /** Resolves when the parse may have the piece starting at `at` (default: at once). */
    private readonly gate: (at: number) => Promise<void> = () => Promise.resolve(),
  ) {}

  async next(): Promise<string | undefined> {
    if (this.at >= this.text.length) return undefined;
    await this.gate(this.at);
    const size = this.rnd() < 0.2 ? 1 + Math.floor(this.rnd() * 8) : 1 + Math.floor(this.rnd() * 70_000);
    const piece = this.text.slice(this.at, this.at + size);
    this.at += piece.length;
    this.given++;
    return piece;
  }

  whole(): Promise<string> {
    this.wholeCalls++;
    return Promise.resolve(this.text);
  }
}

describe('the sliced parse of a drain still arriving', () => {
  it('equals the parse of the whole text, piece sizes whatever they are, and never asks for the whole text', async () => {
    for (const seed of [21, 22, 23]) {
      const w = new DrainWriter(random(seed));
      const parts = [w.small(), w.stored(blocksFor(3.5 * PARSE_SLICE_CHARS)), w.small(), w.removed(3 * PARSE_SLICE_CHARS / 10)];
      parts.push(w.removed(PARSE_SLICE_CHARS / 5, true), w.stored(blocksFor(1.5 * PARSE_SLICE_CHARS), false));
      for (let i = 0; i < 600; i++) parts.push(w.small());
      const text = w.drain(parts);
      const source = new PieceSource(text, random(seed));
      expect(await outcome(() => parseKvEventsInSlices(source))).toEqual(await outcome(() => parseKvEventsFast(text)));
      expect(source.wholeCalls).toBe(0);
    }
  });

  it('parses as the text comes: all of the first half is taken and parsed before the rest is given', async () => {
    const w = new DrainWriter(random(31));
    const text = w.drain([w.stored(blocksFor(20 * PARSE_SLICE_CHARS)), ...Array.from({ length: 200 }, () => w.small())]);
    const half = Math.floor(text.length / 2);
    let waiting = false;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const source = new PieceSource(text, random(32), (at) => {
      if (at < half) return Promise.resolve();
      waiting = true;
      return released;
    });
    let done = false;
    const parsing = parseKvEventsInSlices(source).finally(() => (done = true));
    for (let turns = 0; !waiting && !done && turns < 100_000; turns++) await new Promise((r) => setImmediate(r));
    expect({ waiting, done }).toEqual({ waiting: true, done: false });
    release();
    expect(await parsing).toEqual(parseKvEventsFast(text));
    expect(source.wholeCalls).toBe(0);
  });

  it('leaves what it does not expect, and an element longer than its window, to the whole-text parse', async () => {
    const w = new DrainWriter(random(41));
    const filler = Array.from({ length: 300 }, () => w.small());
    const huge = `{"event_id":9,"data":{"type":"updated","block_hash":5,"note":"${'x'.repeat(MAX_WINDOW_CHARS + 10)}"}}`;
    for (const text of [`${w.drain([w.stored(blocksFor(3 * PARSE_SLICE_CHARS)), ...filler])} x`, w.drain([...filler, huge, ...filler])]) {
      const source = new PieceSource(text, random(42));
      expect(await outcome(() => parseKvEventsInSlices(source))).toEqual(await outcome(() => parseKvEventsFast(text)));
      expect(source.wholeCalls).toBe(1);
    }
  });

  it('a blank answer holds no events', async () => {
    expect(await parseKvEventsInSlices(new PieceSource('  \n', random(1)))).toEqual([]);
  });
});
