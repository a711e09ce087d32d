import { relative } from 'node:path';
import { BASE_CONFIG, post, runAttacks, summary, tokenizerFixture, type Attack } from './attack-harness';
import { onWorkers, startPlainWorkers, type PlainWorkers } from './scripted-workers';

/**
 * Router RSS and /health latency under hostile clients: request chat templates (a billion-item
 * range, nested ranges, a huge rendered prompt), megabyte conversation ids, and request model
 * names that are paths, in front of two scripted workers (attack-harness.ts runs them).
 *
 *   node test/bench/build.mjs [&& node test/bench/build.mjs --ab=<ref>] && node dist-bench/test/bench/hostile/client-attacks.js [--attacks=...]
 */
const fixture = tokenizerFixture;

const templateRouter = {
  allow_request_chat_template: true,
  context_servers: { router: { type: 'kv_cache_aware', tokens_per_block: 32, tokenizer_threads: 1, tokenizer_dir: fixture('llama3') } },
};
const postChat = (url: string, body: unknown, signal: AbortSignal): Promise<string> => post(`${url}/v1/chat/completions`, body, signal);
const chat = (extra: Record<string, unknown>) => ({ model: 'served', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }], ...extra });

const ATTACKS: Attack<PlainWorkers>[] = [
  {
    name: 'chat_template range(1e9)',
    config: (w) => onWorkers(w, { ...BASE_CONFIG, ...templateRouter }),
    run: async ({ url, signal }) => [await postChat(url, chat({ chat_template: '{% for i in range(1000000000) %}x{% endfor %}' }), signal)],
  },
  {
    name: 'chat_template nested ranges',
    config: (w) => onWorkers(w, { ...BASE_CONFIG, ...templateRouter }),
    run: async ({ url, signal }) => [await postChat(url, chat({ chat_template: '{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}{% endfor %}{% endfor %}' }), signal)],
  },
  {
    name: 'chat_template 300M-char prompt',
    config: (w) => onWorkers(w, { ...BASE_CONFIG, ...templateRouter }),
    run: async ({ url, signal }) => [
      await postChat(url, chat({ chat_template: '{% for i in range(100000) %}{{ messages[0].content }}{% endfor %}', messages: [{ role: 'user', content: 'p'.repeat(3000) }] }), signal),
    ],
  },
  {
    name: '300 x 3 MB conversation ids',
    config: (w) => onWorkers(w, { ...BASE_CONFIG, generation_servers: { router: { type: 'conversation' } } }),
    run: async ({ url, signal }) => {
      const out: string[] = [];
      const pad = 'i'.repeat(3 * 1024 * 1024);
      for (let i = 0; i < 300 && !signal.aborted; i++) out.push(await postChat(url, chat({ prompt_cache_key: `${i}-${pad}` }), signal));
      return summary(out);
    },
  },
  {
    name: '20 model names that are paths',
    config: (w) => onWorkers(w, { ...BASE_CONFIG, context_servers: { router: { type: 'kv_cache_aware', tokens_per_block: 32, tokenizer_threads: 1 } } }),
    run: async ({ url, signal }) => {
      const out: string[] = [];
      const dir = fixture('gemma3');
      for (let i = 1; i <= 20 && !signal.aborted; i++) out.push(await postChat(url, chat({ model: `${'/proc/self/root'.repeat(i)}${dir}` }), signal));
      out.push(await postChat(url, chat({ model: `/proc/self/cwd/${relative(process.cwd(), dir)}` }), signal));
      return summary(out);
    },
  },
];

async function main(): Promise<void> {
  const workers = await startPlainWorkers();
  await runAttacks(ATTACKS, workers);
  workers.close();
}

void main();
