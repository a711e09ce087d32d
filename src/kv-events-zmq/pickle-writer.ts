/**
 * Writes values as Python's pickle protocol 4 does (the default of Python 3.8 to 3.13), for
 * the simulated workers that push reports to the centralized KV router (see docs/protocol.md
 * "Centralized KV router"). Strings, lists, dicts and objects are memoized as Python memoizes
 * them; a string seen before is written as a reference to it.
 */

/** An instance of a Python class: pickled as NEWOBJ of `module.name` with its fields as state. */
export class PythonObject {
  constructor(
    readonly module: string,
    readonly name: string,
    readonly fields: Readonly<Record<string, unknown>>,
  ) {}
}

export function writePickle(value: unknown): Buffer {
  const body = new PickleWriter();
  body.value(value);
  body.op(0x2e); // STOP
  const payload = body.bytes();
  const head = Buffer.alloc(11);
  head[0] = 0x80; // PROTO 4
  head[1] = 4;
  head[2] = 0x95; // FRAME
  head.writeBigUInt64LE(BigInt(payload.length), 3);
  return Buffer.concat([head, payload]);
}

const MIN_I32 = -(2 ** 31);
const MAX_I32 = 2 ** 31 - 1;

class PickleWriter {
  private readonly chunks: Buffer[] = [];
  private readonly strings = new Map<string, number>();
  private memoSize = 0;

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }

  op(code: number, ...bytes: number[]): void {
    this.chunks.push(Buffer.from([code, ...bytes]));
  }

  value(v: unknown): void {
    if (v === null || v === undefined) return this.op(0x4e); // NONE
    if (v === true) return this.op(0x88);
    if (v === false) return this.op(0x89);
    if (typeof v === 'number') return Number.isInteger(v) ? this.int(BigInt(v)) : this.float(v);
    if (typeof v === 'bigint') return this.int(v);
    if (typeof v === 'string') return this.string(v);
    if (Buffer.isBuffer(v)) return this.binBytes(v);
    if (Array.isArray(v)) return this.list(v);
    if (v instanceof PythonObject) return this.object(v);
    if (typeof v === 'object') return this.dict(v as Record<string, unknown>);
    throw new TypeError(`cannot pickle a ${typeof v}`);
  }

  private memoize(): void {
    this.op(0x94);
    this.memoSize++;
  }

  private int(v: bigint): void {
    if (v >= 0n && v < 256n) return this.op(0x4b, Number(v)); // BININT1
    if (v >= 0n && v < 65536n) return this.op(0x4d, Number(v & 0xffn), Number(v >> 8n)); // BININT2
    if (v >= BigInt(MIN_I32) && v <= BigInt(MAX_I32)) {
      const b = Buffer.alloc(5);
      b[0] = 0x4a; // BININT
      b.writeInt32LE(Number(v), 1);
      this.chunks.push(b);
      return;
    }
    // LONG1: the shortest two's complement little-endian encoding, as Python's encode_long.
    const out: number[] = [];
    let x = v;
    for (;;) {
      out.push(Number(x & 0xffn));
      x >>= 8n;
      const sign = out[out.length - 1] & 0x80;
      if ((x === 0n && !sign) || (x === -1n && sign)) break;
    }
    this.op(0x8a, out.length, ...out);
  }

  private float(v: number): void {
    const b = Buffer.alloc(9);
    b[0] = 0x47; // BINFLOAT
    b.writeDoubleBE(v, 1);
    this.chunks.push(b);
  }

  private string(s: string): void {
    const seen = this.strings.get(s);
    if (seen !== undefined) return this.get(seen);
    const utf8 = Buffer.from(s, 'utf8');
    if (utf8.length < 256) this.op(0x8c, utf8.length); // SHORT_BINUNICODE
    else {
      const head = Buffer.alloc(5);
      head[0] = 0x58; // BINUNICODE
      head.writeUInt32LE(utf8.length, 1);
      this.chunks.push(head);
    }
    this.chunks.push(utf8);
    this.strings.set(s, this.memoSize);
    this.memoize();
  }

  private binBytes(b: Buffer): void {
    if (b.length < 256) this.op(0x43, b.length);
    else {
      const head = Buffer.alloc(5);
      head[0] = 0x42;
      head.writeUInt32LE(b.length, 1);
      this.chunks.push(head);
    }
    this.chunks.push(b);
    this.memoize();
  }

  private get(i: number): void {
    if (i < 256) return this.op(0x68, i); // BINGET
    const b = Buffer.alloc(5);
    b[0] = 0x6a; // LONG_BINGET
    b.writeUInt32LE(i, 1);
    this.chunks.push(b);
  }

  /** Items in batches of 1000 between MARK and APPENDS/SETITEMS, as Python batches them. */
  private list(items: readonly unknown[]): void {
    this.op(0x5d); // EMPTY_LIST
    this.memoize();
    for (let i = 0; i < items.length; i += 1000) {
      const batch = items.slice(i, i + 1000);
      if (batch.length === 1) {
        this.value(batch[0]);
        this.op(0x61); // APPEND
        continue;
      }
      this.op(0x28);
      for (const item of batch) this.value(item);
      this.op(0x65); // APPENDS
    }
  }

  private dict(d: Record<string, unknown>): void {
    this.op(0x7d); // EMPTY_DICT
    this.memoize();
    this.items(d);
  }

  private items(d: Record<string, unknown>): void {
    const entries = Object.entries(d);
    for (let i = 0; i < entries.length; i += 1000) {
      const batch = entries.slice(i, i + 1000);
      if (batch.length === 1) {
        this.string(batch[0][0]);
        this.value(batch[0][1]);
        this.op(0x73); // SETITEM
        continue;
      }
      this.op(0x28);
      for (const [k, v] of batch) {
        this.string(k);
        this.value(v);
      }
      this.op(0x75); // SETITEMS
    }
  }

  /** copyreg.__reduce_ex__ for protocol 2+: NEWOBJ of the class with no arguments, then BUILD of __dict__. */
  private object(o: PythonObject): void {
    this.string(o.module);
    this.string(o.name);
    this.op(0x93); // STACK_GLOBAL
    this.memoize();
    this.op(0x29); // EMPTY_TUPLE
    this.op(0x81); // NEWOBJ
    this.memoize();
    this.dict(o.fields as Record<string, unknown>);
    this.op(0x62); // BUILD
  }
}
