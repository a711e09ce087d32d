/**
 * A restricted reader of Python pickles (protocols 2 to 5), for the reports TensorRT-LLM's
 * workers push to the centralized KV router (see docs/protocol.md "Centralized KV router").
 * It builds plain values and never runs anything: the only classes it accepts are the ones
 * named in `allowedClasses`, which become `{ __class__: name, ...fields }`. Any other opcode or
 * class is a PickleError, so a hostile frame costs at most its own size.
 */

export class PickleError extends Error {
  override readonly name = 'PickleError';
}

/** A Python object of an allowed class, rebuilt from its `__dict__`. */
export interface PickledObject {
  __class__: string;
  [field: string]: unknown;
}

export interface PickleReadOptions {
  /** `module.qualname` of each class the stream may name. */
  allowedClasses: ReadonlySet<string>;
  /** Nesting allowed (lists, dicts, objects), default 64. */
  maxDepth?: number;
}

const MARK = Symbol('mark');
type Item = unknown;

interface ClassRef {
  __classref__: string;
}

/** Reads one pickle that must span exactly `data`. */
export function readPickle(data: Uint8Array, options: PickleReadOptions): unknown {
  return new PickleReader(data, options).read();
}

class PickleReader {
  private pos = 0;
  private readonly stack: Item[] = [];
  private readonly marks: number[] = [];
  private readonly memo: Item[] = [];
  private readonly view: DataView;
  private readonly maxDepth: number;

  constructor(private readonly data: Uint8Array, private readonly options: PickleReadOptions) {
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    this.maxDepth = options.maxDepth ?? 64;
  }

  read(): unknown {
    for (;;) {
      const op = this.u8();
      switch (op) {
        case 0x80: this.u8(); break; // PROTO
        case 0x95: this.skip(8); break; // FRAME: the frame's length; opcodes follow as usual
        case 0x2e: return this.stop(); // STOP
        case 0x28: this.pushMark(); break; // MARK
        case 0x29: this.stack.push([]); break; // EMPTY_TUPLE
        case 0x85: this.stack.push([this.pop()]); break; // TUPLE1
        case 0x86: { const b = this.pop(); this.stack.push([this.pop(), b]); break; } // TUPLE2
        case 0x87: { const c = this.pop(); const b = this.pop(); this.stack.push([this.pop(), b, c]); break; } // TUPLE3
        case 0x74: case 0x6c: this.stack.push(this.popMark()); break; // TUPLE, LIST
        case 0x5d: case 0x8f: this.stack.push([]); break; // EMPTY_LIST, EMPTY_SET
        case 0x61: { const v = this.pop(); this.list(this.top()).push(v); break; } // APPEND
        case 0x65: case 0x90: { const items = this.popMark(); this.list(this.top()).push(...items); break; } // APPENDS, ADDITEMS
        case 0x91: this.stack.push(this.popMark()); break; // FROZENSET
        case 0x7d: this.stack.push({}); break; // EMPTY_DICT
        case 0x64: this.stack.push(this.setItems({}, this.popMark())); break; // DICT
        case 0x73: { const v = this.pop(); const k = this.pop(); this.setItems(this.top(), [k, v]); break; } // SETITEM
        case 0x75: { const items = this.popMark(); this.setItems(this.top(), items); break; } // SETITEMS
        case 0x4e: this.stack.push(null); break; // NONE
        case 0x88: this.stack.push(true); break; // NEWTRUE
        case 0x89: this.stack.push(false); break; // NEWFALSE
        case 0x4b: this.stack.push(this.u8()); break; // BININT1
        case 0x4d: this.stack.push(this.view.getUint16(this.need(2), true)); break; // BININT2
        case 0x4a: this.stack.push(this.view.getInt32(this.need(4), true)); break; // BININT
        case 0x8a: this.stack.push(this.long(this.u8())); break; // LONG1
        case 0x8b: this.stack.push(this.long(this.view.getUint32(this.need(4), true))); break; // LONG4
        case 0x47: this.stack.push(this.view.getFloat64(this.need(8), false)); break; // BINFLOAT
        case 0x8c: this.stack.push(this.text(this.u8())); break; // SHORT_BINUNICODE
        case 0x58: this.stack.push(this.text(this.view.getUint32(this.need(4), true))); break; // BINUNICODE
        case 0x8d: this.stack.push(this.text(this.len64())); break; // BINUNICODE8
        case 0x43: this.stack.push(this.bytes(this.u8())); break; // SHORT_BINBYTES
        case 0x42: this.stack.push(this.bytes(this.view.getUint32(this.need(4), true))); break; // BINBYTES
        case 0x8e: case 0x96: this.stack.push(this.bytes(this.len64())); break; // BINBYTES8, BYTEARRAY8
        case 0x94: this.memo.push(this.top()); break; // MEMOIZE
        case 0x71: this.put(this.u8()); break; // BINPUT
        case 0x72: this.put(this.view.getUint32(this.need(4), true)); break; // LONG_BINPUT
        case 0x68: this.stack.push(this.get(this.u8())); break; // BINGET
        case 0x6a: this.stack.push(this.get(this.view.getUint32(this.need(4), true))); break; // LONG_BINGET
        case 0x93: { const name = this.pop(); this.stack.push(this.classRef(this.pop(), name)); break; } // STACK_GLOBAL
        case 0x63: { const module = this.line(); this.stack.push(this.classRef(module, this.line())); break; } // GLOBAL
        case 0x81: { const args = this.pop(); this.stack.push(this.newObject(this.pop(), args)); break; } // NEWOBJ
        case 0x62: { const state = this.pop(); this.build(this.top(), state); break; } // BUILD
        default:
          throw new PickleError(`unsupported pickle opcode 0x${op.toString(16)} at byte ${this.pos - 1}`);
      }
      if (this.marks.length > this.maxDepth) throw new PickleError(`nested deeper than ${this.maxDepth}`);
    }
  }

  private stop(): unknown {
    if (this.pos !== this.data.length) throw new PickleError(`${this.data.length - this.pos} bytes after the end of the pickle`);
    if (this.stack.length !== 1 || this.marks.length) throw new PickleError('the pickle did not leave exactly one value');
    const value = this.stack[0];
    if (isClassRef(value)) throw new PickleError('a bare class reference');
    return value;
  }

  private need(n: number): number {
    const at = this.pos;
    if (at + n > this.data.length) throw new PickleError('the pickle ends early');
    this.pos += n;
    return at;
  }

  private skip(n: number): void {
    this.need(n);
  }

  private u8(): number {
    return this.data[this.need(1)];
  }

  private len64(): number {
    const n = this.view.getBigUint64(this.need(8), true);
    if (n > BigInt(this.data.length)) throw new PickleError('the pickle ends early');
    return Number(n);
  }

  private text(n: number): string {
    const at = this.need(n);
    return Buffer.from(this.data.buffer, this.data.byteOffset + at, n).toString('utf8');
  }

  private bytes(n: number): Buffer {
    const at = this.need(n);
    return Buffer.from(this.data.subarray(at, at + n));
  }

  private line(): string {
    const end = this.data.indexOf(0x0a, this.pos);
    if (end < 0) throw new PickleError('the pickle ends early');
    const s = Buffer.from(this.data.subarray(this.pos, end)).toString('utf8');
    this.pos = end + 1;
    return s;
  }

  /** Two's complement little-endian integer: a number when exact, else a bigint. */
  private long(n: number): number | bigint {
    const at = this.need(n);
    if (n === 0) return 0;
    let v = 0n;
    for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(this.data[at + i]);
    if (this.data[at + n - 1] & 0x80) v -= 1n << BigInt(8 * n);
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }

  private pushMark(): void {
    this.marks.push(this.stack.length);
  }

  private popMark(): Item[] {
    const at = this.marks.pop();
    if (at === undefined) throw new PickleError('no mark on the stack');
    return this.stack.splice(at);
  }

  private pop(): Item {
    const floor = this.marks.length ? this.marks[this.marks.length - 1] : 0;
    if (this.stack.length <= floor) throw new PickleError('stack underflow');
    return this.stack.pop();
  }

  private top(): Item {
    if (!this.stack.length) throw new PickleError('stack underflow');
    return this.stack[this.stack.length - 1];
  }

  private put(i: number): void {
    if (i > this.memo.length) throw new PickleError(`memo index ${i} out of order`);
    this.memo[i] = this.top();
  }

  private get(i: number): Item {
    if (i >= this.memo.length) throw new PickleError(`memo index ${i} unknown`);
    return this.memo[i];
  }

  private list(v: Item): Item[] {
    if (!Array.isArray(v)) throw new PickleError('append to something that is not a list');
    return v;
  }

  private setItems(target: Item, items: Item[]): Record<string, unknown> {
    if (typeof target !== 'object' || target === null || Array.isArray(target) || isClassRef(target)) throw new PickleError('setitem on something that is not a dict');
    if (items.length % 2) throw new PickleError('odd number of dict items');
    const dict = target as Record<string, unknown>;
    for (let i = 0; i < items.length; i += 2) {
      const key = items[i];
      if (typeof key !== 'string' && typeof key !== 'number' && typeof key !== 'bigint') throw new PickleError('a dict key that is not a string or an integer');
      const name = String(key);
      if (name === '__proto__') throw new PickleError('a dict key named __proto__');
      dict[name] = items[i + 1];
    }
    return dict;
  }

  private classRef(module: Item, name: Item): ClassRef {
    const full = `${String(module)}.${String(name)}`;
    if (typeof module !== 'string' || typeof name !== 'string' || !this.options.allowedClasses.has(full)) {
      throw new PickleError(`class ${full} is not allowed`);
    }
    return { __classref__: name };
  }

  private newObject(cls: Item, args: Item): PickledObject {
    if (!isClassRef(cls)) throw new PickleError('NEWOBJ of something that is not an allowed class');
    if (!Array.isArray(args) || args.length) throw new PickleError('NEWOBJ with arguments');
    return { __class__: cls.__classref__ };
  }

  private build(target: Item, state: Item): void {
    if (typeof target !== 'object' || target === null || !('__class__' in target)) throw new PickleError('BUILD of something that is not an object');
    if (typeof state !== 'object' || state === null || Array.isArray(state)) throw new PickleError('BUILD with a state that is not a dict');
    for (const [k, v] of Object.entries(state)) if (k !== '__class__') (target as PickledObject)[k] = v;
  }
}

function isClassRef(v: unknown): v is ClassRef {
  return typeof v === 'object' && v !== null && '__classref__' in v;
}
