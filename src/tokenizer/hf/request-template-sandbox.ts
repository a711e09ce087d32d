import { Worker } from 'node:worker_threads';
import { HttpApiError } from '../../common';
import { JINJA_PYTHON_STRINGS_SOURCE } from './jinja-python-strings';

/**
 * Bounds of rendering a request's own chat template (README "Routing policies"). A template
 * is a program the client wrote: it runs on a thread of its own with a heap limit, and is
 * stopped when it runs too long, loops too often or writes too much.
 */
export const REQUEST_TEMPLATE_BOUNDS = {
  /** Wall time of one render; the thread is stopped when an in-template check does not end it first. */
  timeoutMs: 1_000,
  /** Longest rendered prompt (characters): more than any model's context holds. */
  maxOutputChars: 8 * 1024 * 1024,
  /** Blocks rendered (every loop iteration and taken branch): a chat of 100k messages needs a few hundred thousand. */
  maxBlocks: 1_000_000,
  /** Largest `range()`, as Jinja's sandbox (which transformers renders templates in) allows. */
  maxRange: 100_000,
  /** Longest template text accepted. */
  maxTemplateChars: 256 * 1024,
  /** Templates kept compiled on the thread (least recently used dropped); longer ones are not kept. */
  compiledCacheSize: 32,
  compiledCacheMaxChars: 64 * 1024,
  /** Heap of the rendering thread: running out ends the render, not the router. */
  heapMb: 256,
  /** Renders waiting for the thread; more are refused (503). */
  maxQueued: 64,
} as const;

export type RequestTemplateBounds = { readonly [K in keyof typeof REQUEST_TEMPLATE_BOUNDS]: number };

/** Why a request template was not rendered: 400 with `param: chat_template` (503 when the renderer is busy). */
export class RequestTemplateError extends HttpApiError {
  constructor(message: string, code: string, status = 400) {
    super(status, `chat_template: ${message}`, { param: 'chat_template', code, ...(status === 503 ? { headers: { 'retry-after': '1' } } : {}) });
  }
}

/**
 * The thread's program, plain JavaScript evaluated from a string (as the tokenizer threads):
 * @huggingface/jinja with `range()` bounded and every block render counted, timed and sized.
 * The patches live in this thread's own copy of the module only.
 */
const SANDBOX_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createRequire } = require('node:module');
const path = require('node:path');
const req = createRequire(path.join(workerData.cwd, 'package.json'));
const jinja = req('@huggingface/jinja');
const { Template, Environment, Interpreter } = jinja;
${JINJA_PYTHON_STRINGS_SOURCE}
patchJinjaPythonStrings(jinja);
const B = workerData.bounds;
class Bound extends Error { constructor(kind, message) { super(message); this.kind = kind; } }
let run = { blocks: 0, produced: 0, deadline: 0 };
const range = (start, stop, step = 1) => {
  if (stop === undefined) { stop = start; start = 0; }
  if (![start, stop, step].every(Number.isFinite) || step === 0) throw new Error('range() needs finite numbers and a non-zero step');
  const n = Math.max(0, Math.ceil((stop - start) / step));
  if (n > B.maxRange) throw new Bound('loop_bound', 'range() of ' + n + ' items is larger than the ' + B.maxRange + ' the sandbox allows');
  const out = [];
  for (let i = 0; i < n; i++) out.push(start + i * step);
  return out;
};
const set = Environment.prototype.set;
Environment.prototype.set = function (name, value) { return set.call(this, name, name === 'range' ? range : value); };
const renderBlock = Interpreter.prototype.renderBlock;
Interpreter.prototype.renderBlock = function (statements, environment) {
  if (++run.blocks > B.maxBlocks) throw new Bound('loop_bound', 'more than ' + B.maxBlocks + ' loop iterations and blocks');
  if ((run.blocks & 1023) === 0 && Date.now() > run.deadline) throw new Bound('time_bound', 'did not finish rendering within ' + B.timeoutMs + ' ms');
  const out = renderBlock.call(this, statements, environment);
  run.produced += out.length;
  if (out.length > B.maxOutputChars || run.produced > 8 * B.maxOutputChars) {
    throw new Bound('size_bound', 'renders more than ' + B.maxOutputChars + ' characters');
  }
  return out;
};
parentPort.postMessage({ ready: true });
const compiled = new Map();
const compile = (source) => {
  let t = compiled.get(source);
  if (t) { compiled.delete(source); compiled.set(source, t); return t; }
  try { t = new Template(source); } catch (e) { throw new Bound('syntax', 'does not parse: ' + ((e && e.message) || e)); }
  if (source.length <= B.compiledCacheMaxChars) {
    compiled.set(source, t);
    if (compiled.size > B.compiledCacheSize) compiled.delete(compiled.keys().next().value);
  }
  return t;
};
parentPort.on('message', (m) => {
  run = { blocks: 0, produced: 0, deadline: Date.now() + B.timeoutMs };
  try {
    const text = compile(m.source).render(m.context);
    if (text.length > B.maxOutputChars) throw new Bound('size_bound', 'renders more than ' + B.maxOutputChars + ' characters');
    parentPort.postMessage({ id: m.id, text });
  } catch (e) {
    const kind = e instanceof Bound ? e.kind : e instanceof RangeError ? 'size_bound' : 'render';
    parentPort.postMessage({ id: m.id, kind, error: String((e && e.message) || e) });
  }
});
`;

const CODES: Readonly<Record<string, string>> = {
  syntax: 'invalid_chat_template',
  render: 'chat_template_error',
  time_bound: 'chat_template_too_slow',
  loop_bound: 'chat_template_too_many_loops',
  size_bound: 'chat_template_too_large',
};

interface Job {
  id: number;
  source: string;
  context: Record<string, unknown>;
  resolve(text: string): void;
  reject(err: Error): void;
}

type Answer = { ready: true } | { id: number; text: string } | { id: number; kind: string; error: string };

/**
 * Renders request templates one at a time on one thread. A render that outlives the time
 * bound, or a thread that runs out of heap, costs that thread: it is replaced on the next
 * render. Waiting renders are queued (at most `maxQueued`).
 */
export class RequestTemplateSandbox {
  private worker?: Worker;
  /** Whether the thread has loaded the template engine: a job's time starts then. */
  private ready = false;
  private readonly queue: Job[] = [];
  private running?: { job: Job; timer: NodeJS.Timeout | undefined };
  private nextId = 1;
  private closed = false;

  constructor(private readonly bounds: RequestTemplateBounds = REQUEST_TEMPLATE_BOUNDS) {}

  render(source: string, context: Record<string, unknown>): Promise<string> {
    if (source.length > this.bounds.maxTemplateChars) {
      return Promise.reject(new RequestTemplateError(`the template is longer than ${this.bounds.maxTemplateChars} characters`, 'chat_template_too_large'));
    }
    if (this.closed) return Promise.reject(new RequestTemplateError('the renderer is stopped', 'chat_template_unavailable', 503));
    if (this.queue.length >= this.bounds.maxQueued) {
      return Promise.reject(new RequestTemplateError('too many templates waiting to be rendered', 'chat_template_busy', 503));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, source, context, resolve, reject });
      this.next();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const stopped = new RequestTemplateError('the renderer is stopped', 'chat_template_unavailable', 503);
    for (const job of this.queue.splice(0)) job.reject(stopped);
    this.finish()?.reject(stopped);
    await this.stopThread();
  }

  private next(): void {
    if (this.running || this.closed) return;
    const job = this.queue.shift();
    if (!job) return;
    this.running = { job, timer: undefined };
    const worker = this.thread();
    if (this.ready) this.start(worker, job);
  }

  /** Posts the running job; past the in-template checks (a single long step) the thread itself is stopped. */
  private start(worker: Worker, job: Job): void {
    const running = this.running;
    if (running?.job !== job) return;
    running.timer = setTimeout(() => {
      this.finish()?.reject(new RequestTemplateError(`did not finish rendering within ${this.bounds.timeoutMs} ms`, CODES.time_bound));
      void this.stopThread().then(() => this.next());
    }, this.bounds.timeoutMs + 250);
    worker.postMessage({ id: job.id, source: job.source, context: job.context });
  }

  private finish(): Job | undefined {
    const running = this.running;
    if (!running) return undefined;
    if (running.timer) clearTimeout(running.timer);
    this.running = undefined;
    return running.job;
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(SANDBOX_SOURCE, {
      eval: true,
      workerData: { cwd: process.cwd(), bounds: this.bounds },
      resourceLimits: { maxOldGenerationSizeMb: this.bounds.heapMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
    });
    worker.unref();
    this.ready = false;
    worker.on('message', (m: Answer) => {
      if (this.worker !== worker) return;
      if ('ready' in m) {
        this.ready = true;
        if (this.running) this.start(worker, this.running.job);
        return;
      }
      if (this.running?.job.id !== m.id) return;
      const job = this.finish()!;
      if ('text' in m) job.resolve(m.text);
      else job.reject(new RequestTemplateError(m.error, CODES[m.kind] ?? CODES.render));
      this.next();
    });
    const failed = (err: Error & { code?: string }): void => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      const outOfMemory = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.finish()?.reject(
        outOfMemory
          ? new RequestTemplateError(`needs more than the ${this.bounds.heapMb} MB the renderer has`, CODES.size_bound)
          : new RequestTemplateError('the renderer stopped', 'chat_template_unavailable', 503),
      );
      this.next();
    };
    worker.on('error', failed);
    worker.on('exit', (code) => failed(new Error(`template thread exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  private async stopThread(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }
}
