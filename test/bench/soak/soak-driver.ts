/**
 * The client side of a soak: a bounded loop of mixed OpenAI requests (completions and chat,
 * streamed or not) at a fixed concurrency, some aborted by the client on purpose. Every
 * request is classified; anything that is neither a complete answer nor a clear OpenAI-style
 * error (nor a deliberate abort) is a "bad" outcome, kept with a sample for the report.
 */

import { mulberry32 } from '../../../src/simulator/seeded-random';

export interface SoakOptions {
  url: string;
  concurrency: number;
  /** Stop after this many requests ... */
  requests?: number;
  /** ... or after this long, whichever comes first. */
  durationMs?: number;
  /** Share of requests the client abandons (before headers, or mid-stream). */
  abortFraction: number;
  seed?: number;
  maxTokens?: number;
  /** Called after every finished request with the count so far (fault choreography). */
  onProgress?(done: number): void;
  /** Per-request deadline; a request still running past it counts as bad (a hang). */
  requestTimeoutMs?: number;
}

export interface SoakResult {
  total: number;
  complete: number;
  /** Clear errors by status (and SSE error events as `stream:<type>`). */
  errors: Record<string, number>;
  /** The first message seen for each error key. */
  errorSamples: Record<string, string>;
  aborted: number;
  bad: number;
  badSamples: string[];
  elapsedMs: number;
  /** Per error key, the seconds (since start) at which errors happened, bucketed: { "503": { "61": 40 } }. */
  errorTimes: Record<string, Record<string, number>>;
}

const CLEAR_STATUSES = new Set([429, 502, 503, 504]);


type Outcome = { kind: 'complete' } | { kind: 'error'; key: string; message: string } | { kind: 'aborted' } | { kind: 'bad'; why: string };

export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const rand = mulberry32(opts.seed ?? 42);
  const started = Date.now();
  const deadline = opts.durationMs ? started + opts.durationMs : Infinity;
  const limit = opts.requests ?? Infinity;
  const result: SoakResult = { total: 0, complete: 0, errors: {}, errorSamples: {}, aborted: 0, bad: 0, badSamples: [], elapsedMs: 0, errorTimes: {} };
  let issued = 0;

  const one = async (i: number): Promise<void> => {
    const chat = rand() < 0.5;
    const stream = rand() < 0.5;
    const abort = rand() < opts.abortFraction ? (rand() < 0.5 ? 'early' : 'mid') : undefined;
    const outcome = await request(opts, i, chat, stream, abort, rand);
    result.total++;
    if (outcome.kind === 'complete') result.complete++;
    else if (outcome.kind === 'aborted') result.aborted++;
    else if (outcome.kind === 'error') {
      result.errors[outcome.key] = (result.errors[outcome.key] ?? 0) + 1;
      result.errorSamples[outcome.key] ??= outcome.message;
      const bucket = (result.errorTimes[outcome.key] ??= {});
      const sec = String(Math.floor((Date.now() - started) / 1000));
      bucket[sec] = (bucket[sec] ?? 0) + 1;
    }
    else {
      result.bad++;
      if (result.badSamples.length < 10) result.badSamples.push(`#${i} ${chat ? 'chat' : 'completion'}${stream ? ' stream' : ''}: ${outcome.why}`);
    }
    opts.onProgress?.(result.total);
  };

  const lane = async (): Promise<void> => {
    while (issued < limit && Date.now() < deadline) await one(issued++);
  };
  await Promise.all(Array.from({ length: opts.concurrency }, lane));
  result.elapsedMs = Date.now() - started;
  return result;
}

/**
 * One request, raced against its deadline: a request that neither settles nor reacts to its
 * abort is reported with the step it was stuck in, instead of stalling the whole soak.
 */
async function request(
  opts: SoakOptions,
  i: number,
  chat: boolean,
  stream: boolean,
  abort: 'early' | 'mid' | undefined,
  rand: () => number,
): Promise<Outcome> {
  const step = { at: 'fetch' };
  const timeoutMs = opts.requestTimeoutMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<Outcome>((resolve) => {
    // Grace after the abort the attempt itself fires at timeoutMs.
    timer = setTimeout(() => resolve({ kind: 'bad', why: `stuck in ${step.at} (abort: ${abort ?? 'none'})` }), timeoutMs + 5_000);
  });
  try {
    return await Promise.race([attempt(opts, i, chat, stream, abort, rand, step), stuck]);
  } finally {
    clearTimeout(timer);
  }
}

async function attempt(
  opts: SoakOptions,
  i: number,
  chat: boolean,
  stream: boolean,
  abort: 'early' | 'mid' | undefined,
  rand: () => number,
  step: { at: string },
): Promise<Outcome> {
  const client = new AbortController();
  const hang = setTimeout(() => client.abort(new Error('hang')), opts.requestTimeoutMs ?? 30_000);
  const maxTokens = opts.maxTokens ?? 8;
  const body = chat
    ? { model: 'sim-model', messages: [{ role: 'user', content: `soak request ${i}: tell me something` }], max_tokens: maxTokens, stream }
    : { model: 'sim-model', prompt: `soak request ${i}: once upon a time`, max_tokens: maxTokens, stream };
  let early: NodeJS.Timeout | undefined;
  if (abort === 'early') early = setTimeout(() => client.abort(), Math.floor(rand() * 5));
  try {
    const res = await fetch(`${opts.url}${chat ? '/v1/chat/completions' : '/v1/completions'}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: client.signal,
    });
    if (abort === 'mid') {
      const reader = res.body!.getReader();
      step.at = 'first read';
      await reader.read();
      client.abort();
      // cancel(), not read(): a read after the abort may never settle in undici's fetch.
      step.at = 'cancel after abort';
      await reader.cancel().catch(() => undefined);
      return { kind: 'aborted' };
    }
    step.at = 'body';
    const text = await res.text();
    if (res.status !== 200) return classifyError(res.status, text);
    return stream ? classifyStream(text) : classifyJson(text);
  } catch (err) {
    if (client.signal.aborted) {
      return (client.signal.reason as Error | undefined)?.message === 'hang' ? { kind: 'bad', why: 'no answer within the request deadline' } : { kind: 'aborted' };
    }
    return { kind: 'bad', why: `transport error: ${(err as Error).message} ${String((err as { cause?: Error }).cause?.message ?? '')}` };
  } finally {
    clearTimeout(hang);
    clearTimeout(early);
  }
}

function classifyError(status: number, text: string): Outcome {
  try {
    const json = JSON.parse(text) as { error?: { message?: string; type?: string } };
    if (CLEAR_STATUSES.has(status) && json.error?.message && json.error.type) return { kind: 'error', key: String(status), message: json.error.message };
  } catch {
    /* falls through */
  }
  return { kind: 'bad', why: `status ${status}: ${text.slice(0, 200)}` };
}

function classifyJson(text: string): Outcome {
  try {
    const json = JSON.parse(text) as { choices?: unknown[] };
    if (Array.isArray(json.choices) && json.choices.length > 0) return { kind: 'complete' };
  } catch {
    /* falls through */
  }
  return { kind: 'bad', why: `200 without a completion: ${text.slice(0, 200)}` };
}

/** A stream must end with [DONE], or with one final error event (then nothing). */
function classifyStream(text: string): Outcome {
  const events = text
    .split('\n\n')
    .map((e) => e.trim())
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
  const last = events.at(-1);
  if (last === '[DONE]') {
    const broken = events.slice(0, -1).find((e) => e.includes('"error"'));
    return broken ? { kind: 'bad', why: `error event before [DONE]: ${broken.slice(0, 200)}` } : { kind: 'complete' };
  }
  if (last) {
    try {
      const json = JSON.parse(last) as { error?: { message?: string; type?: string } };
      if (json.error?.message && json.error.type) return { kind: 'error', key: `stream:${json.error.type}`, message: json.error.message };
    } catch {
      /* falls through */
    }
  }
  return { kind: 'bad', why: `stream ended without [DONE] or an error event (${events.length} events): ${text.slice(-200)}` };
}
