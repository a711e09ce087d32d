import { fork } from 'node:child_process';
import { join } from 'node:path';
import { BASE_CONFIG, post, quantile, runAttacks, summary, tokenizerFixture, type Attack } from './attack-harness';
import { onWorkers, startPlainWorkers, type PlainWorkers } from './scripted-workers';

/**
 * Router RSS, CPU and /health latency under tokenizer work a client can ask for, with a
 * KV-aware context pool that tokenizes prompts (the Llama 3 fixture tokenizer, one tokenizer
 * thread): three concurrent 16 MB prompts while a small request is timed one after another
 * (from a process of its own), the same as chats of one 16 MB message, and one chat with
 * 100,000 `tools`.
 *
 *   node test/bench/build.mjs [&& node test/bench/build.mjs --ab=<ref>] && node dist-bench/test/bench/hostile/tokenizer-attacks.js [--attacks=...]
 */
const kvRouter = {
  ...BASE_CONFIG,
  context_servers: { router: { type: 'kv_cache_aware', tokens_per_block: 32, tokenizer_threads: 1, tokenizer_dir: tokenizerFixture('llama3') } },
};

const small = { model: 'served', max_tokens: 1, messages: [{ role: 'user', content: 'a small request' }] };

/**
 * Small chat requests one after another until `done` settles (or the deadline): their
 * latencies, timed from a process of their own (request-poller.ts) so the attack's client
 * work does not count.
 */
async function timeSmall(url: string, done: Promise<unknown>, signal: AbortSignal): Promise<string[]> {
  const poller = fork(join(__dirname, 'request-poller.js'), [url, '/v1/chat/completions', JSON.stringify(small)], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
  const results = new Promise<{ status: string; ms: number }[]>((resolve) => {
    poller.once('message', (m: { status: string; ms: number }[]) => resolve(m));
    poller.once('exit', () => resolve([]));
  });
  await Promise.race([done.catch(() => undefined), new Promise((r) => signal.addEventListener('abort', r, { once: true }))]);
  poller.send('stop');
  const got = await results;
  const inOrder = got.length <= 12 ? ` (in order: ${got.map((r) => Math.round(r.ms)).join(', ')})` : '';
  const latencies = got.map((r) => r.ms).sort((a, b) => a - b);
  return [...summary(got.map((r) => r.status)).map((s) => `small ${s}`), `small p50 ${quantile(latencies, 0.5)} ms, max ${Math.round(latencies[latencies.length - 1] ?? NaN)} ms${inOrder}`];
}

const ATTACKS: Attack<PlainWorkers>[] = [
  {
    name: 'three 16 MB prompts, a small request timed',
    config: (w) => onWorkers(w, kvRouter),
    run: async ({ url, signal }) => {
      // Words the tokenizer cannot merge away: about 3.2M pre-tokens each.
      const prompt = 'lorem ipsum dolor sit amet, '.repeat(Math.floor(16e6 / 28));
      const big = Promise.all([0, 1, 2].map((i) => post(`${url}/v1/completions`, { model: 'served', max_tokens: 1, prompt: `${i} ${prompt}` }, signal)));
      const smallFigures = await timeSmall(url, big, signal);
      return [...summary((await big).map((s) => `16 MB ${s}`)), ...smallFigures];
    },
  },
  {
    name: 'chats of one 16 MB message each, three at once, a small request timed',
    config: (w) => onWorkers(w, kvRouter),
    run: async ({ url, signal }) => {
      const content = 'lorem ipsum dolor sit amet, '.repeat(Math.floor(16e6 / 28));
      const big = Promise.all([0, 1, 2].map((i) => post(`${url}/v1/chat/completions`, { ...small, messages: [{ role: 'user', content: `${i} ${content}` }] }, signal)));
      const smallFigures = await timeSmall(url, big, signal);
      return [...summary((await big).map((s) => `16 MB ${s}`)), ...smallFigures];
    },
  },
  {
    name: 'one chat with 100k tools',
    config: (w) => onWorkers(w, kvRouter),
    run: async ({ url, signal }) => {
      const tools = Array.from({ length: 100_000 }, (_, i) => ({ type: 'function', function: { name: `tool_${i}`, description: 'does a thing', parameters: { type: 'object', properties: { x: { type: 'string' } } } } }));
      const t = performance.now();
      const big = post(`${url}/v1/chat/completions`, { ...small, tools }, signal).then((s) => `tools ${s} in ${Math.round(performance.now() - t)} ms`);
      const smallFigures = await timeSmall(url, big, signal);
      return [await big, ...smallFigures];
    },
  },
];

async function main(): Promise<void> {
  const workers = await startPlainWorkers();
  await runAttacks(ATTACKS, workers);
  workers.close();
}

void main();
