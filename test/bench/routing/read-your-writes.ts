import { performance } from 'node:perf_hooks';
import { blockHashChain } from '../../../src/kv-cache/block-hash';
import { KvBlockTable } from '../../../src/kv-cache';
import { startSimCluster, type FaultRule, type SimCluster, type SimWorker } from '../../../src/simulator';
import { startRouter, waitFor, type RunningRouter } from '../../support/router-app';
import { runScript } from '../lib/run-script';

/**
 * Read-your-writes: a prompt sent again right after its first answer. For kv_cache_aware on
 * both pools of a disaggregated simulated cluster (2 context + 2 generation workers), with
 * routed-block tracking on and off, and workers whose KV events come at once or late: how
 * often the repeat lands on the first answer's context server with its prompt cached, and the
 * first answers' latency (tracking must not slow them). Then the cost of one record.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/routing/read-your-writes.js \
 *     [--pairs=30 --prompt-words=400 --event-lag-ms=50 --rounds=2]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const num = (k: string, d: number): number => Number(args.get(k) ?? d);
const PAIRS = num('pairs', 30);
const WORDS = num('prompt-words', 400);
const LAG_MS = num('event-lag-ms', 50);
const ROUNDS = num('rounds', 2);
const LATENCY = { prefillMsPerToken: 0.02, decodeMsPerToken: 1, maxBatchSize: 32, overheadMs: 1 };

interface Variant {
  name: string;
  track: boolean;
  lagMs: number;
}
interface Outcome {
  same: number;
  cachedFull: number;
  firstMs: number[];
  repeatMs: number[];
}

const VARIANTS: Variant[] = [
  { name: 'tracking on, events at once', track: true, lagMs: 0 },
  { name: 'tracking off, events at once', track: false, lagMs: 0 },
  { name: `tracking on, events ${LAG_MS} ms late`, track: true, lagMs: LAG_MS },
  { name: `tracking off, events ${LAG_MS} ms late`, track: false, lagMs: LAG_MS },
];

const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];
function promptText(seed: number): string {
  const out: string[] = [`Question ${seed}:`];
  for (let i = 0; i < WORDS; i++) out.push(words[(seed * 7 + i * 3 + (i >> 3)) % words.length]);
  return out.join(' ');
}

async function ask(url: string, prompt: string): Promise<{ ms: number; cached: number; prompt: number }> {
  const started = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim', prompt, max_tokens: 4 }),
  });
  const json = (await res.json()) as { usage?: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } } };
  const ms = performance.now() - started;
  if (res.status !== 200 || !json.usage) throw new Error(`request failed with ${res.status}`);
  return { ms, cached: json.usage.prompt_tokens_details?.cached_tokens ?? 0, prompt: json.usage.prompt_tokens };
}

async function runVariant(v: Variant, round: number): Promise<Outcome> {
  let cluster: SimCluster | undefined;
  let router: RunningRouter | undefined;
  try {
    const faults: FaultRule[] = v.lagMs ? [{ kind: 'slow', endpoints: ['kv_cache_events'], delayMs: v.lagMs }] : [];
    cluster = await startSimCluster({ context: 2, generation: 2, latency: LATENCY, faults });
    const policy = { type: 'kv_cache_aware', track_routed_blocks: v.track };
    router = await startRouter({
      context_servers: { urls: cluster.contextUrls, router: policy },
      generation_servers: { urls: cluster.generationUrls, router: policy },
      health: { startup_wait_s: 0 },
    });
    const ctx = cluster.contextWorkers;
    const count = (w: SimWorker) => w.stats.requests.byType.context_only ?? 0;
    const where = (before: number[]) => ctx.findIndex((w, i) => count(w) > before[i]);
    await ask(router.url, promptText(999_999)); // warm-up: tokenizer threads, connections
    const out: Outcome = { same: 0, cachedFull: 0, firstMs: [], repeatMs: [] };
    for (let p = 0; p < PAIRS; p++) {
      const prompt = promptText(round * 10_000 + p);
      let before = ctx.map(count);
      const a = await ask(router.url, prompt);
      const first = where(before);
      before = ctx.map(count);
      const b = await ask(router.url, prompt);
      out.firstMs.push(a.ms);
      out.repeatMs.push(b.ms);
      if (where(before) === first) out.same++;
      // The last prompt token is never in a block key: a full hit caches all whole blocks.
      if (b.cached >= Math.floor((b.prompt - 1) / 32) * 32 && b.cached > 0) out.cachedFull++;
    }
    const app = router.app;
    const { ServerRegistry } = await import('../../../src/servers');
    await waitFor(() => app.get(ServerRegistry).list().every((s) => s.activeRequests === 0), 10_000, 'idle').catch(() => undefined);
    return out;
  } finally {
    await router?.close();
    await cluster?.close();
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : 0;
};
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);

function recordCost(): { usPerRecord: number; blocks: number } {
  const chain = blockHashChain(Array.from({ length: 2049 }, (_, i) => 1000 + i), 32);
  const table = new KvBlockTable();
  const n = 20_000;
  for (let i = 0; i < 1000; i++) table.track(chain, 60_000);
  const started = performance.now();
  for (let i = 0; i < n; i++) table.track(chain, 60_000);
  return { usPerRecord: ((performance.now() - started) * 1000) / n, blocks: chain.length };
}

async function main(): Promise<void> {
  const results = new Map<string, Outcome>(VARIANTS.map((v) => [v.name, { same: 0, cachedFull: 0, firstMs: [], repeatMs: [] }]));
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating order, reversed every other round, so drift hits every variant alike.
    const order = round % 2 ? [...VARIANTS].reverse() : VARIANTS;
    for (const v of order) {
      const r = await runVariant(v, round);
      const acc = results.get(v.name)!;
      acc.same += r.same;
      acc.cachedFull += r.cachedFull;
      acc.firstMs.push(...r.firstMs);
      acc.repeatMs.push(...r.repeatMs);
    }
  }
  const total = PAIRS * ROUNDS;
  const lines = [
    `Read-your-writes, kv_cache_aware on both pools, 2 context + 2 generation simulated workers, ${total} pairs of ~${WORDS + 2}-word text prompts (bundled tokenizer)`,
    '',
    '| variant | repeat on same context server | repeat fully cached | first answer p50 ms | first answer mean ms | repeat p50 ms |',
    '|---|---|---|---|---|---|',
  ];
  for (const v of VARIANTS) {
    const r = results.get(v.name)!;
    lines.push(`| ${v.name} | ${r.same}/${total} | ${r.cachedFull}/${total} | ${median(r.firstMs).toFixed(2)} | ${mean(r.firstMs).toFixed(2)} | ${median(r.repeatMs).toFixed(2)} |`);
  }
  const cost = recordCost();
  lines.push('', `Recording one finished prompt of ${cost.blocks} blocks: ${cost.usPerRecord.toFixed(2)} us (synchronous, on finish).`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

runScript(main);
