import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { blockHashChain } from '../../../src/kv-cache/block-hash';
import { DEFAULT_HTTP_SESSION_OPTIONS, HttpSessionProvider } from '../../../src/http-session';
import { KvReportEndpoints, type KvReportEndpoint } from '../../../src/kv-events-zmq';
import {
  centralizedKvCacheAwareArgs,
  CentralizedKvCacheAwareRouter,
  conversationArgs,
  ConversationRouter,
  kvCacheAwareArgs,
  KvCacheAwareRouter,
  loadBalancingArgs,
  LoadBalancingRouter,
  RoundRobinRouter,
  type BaseRouter,
  type RoutingRequest,
} from '../../../src/routing';
import { ServerState } from '../../../src/servers';
import { getTokenizer, PromptTokenizer } from '../../../src/tokenizer';
import { runScript } from '../lib/run-script';
import { kvRoom } from '../../routing/support/policy-harness';

/**
 * What one routing decision costs on the event loop for an 8k-token prompt given as token
 * ids (no tokenization), per policy, with 4 servers whose block tables hold thousands of
 * blocks; then what tokenizing an 8k-token text costs, inline and on a worker thread. Each
 * policy's arguments go through its own schema, as the app's config does (its defaults).
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/routing/decision-cost.js [--iterations=2000 --tokens=8192]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const ITER = Number(args.get('iterations') ?? 2000);
const TOKENS = Number(args.get('tokens') ?? 8192);
const SERVERS = 4;

const session = new HttpSessionProvider(DEFAULT_HTTP_SESSION_OPTIONS); // never opened: no polling
const ids = Array.from({ length: TOKENS }, (_, i) => 1000 + ((i * 7919) % 100_000));

function states(): ServerState[] {
  const list = Array.from({ length: SERVERS }, (_, i) => new ServerState({ url: `http://127.0.0.1:${20000 + i}`, role: 'generation', source: 'config' }));
  list.forEach((s, i) => {
    const table = s.kvTable();
    for (let b = 0; b < 4000; b++) table.add(BigInt(i * 1_000_000 + b));
  });
  // One server holds the first half of the prompt.
  for (const h of blockHashChain(ids, 32).slice(0, TOKENS / 64)) list[1].kvTable().add(h);
  return list;
}

let nextId = 0;
const req = (): RoutingRequest => ({ id: String(++nextId), kind: 'completion', body: { prompt: ids } });

async function measure(name: string, router: BaseRouter, args: Record<string, unknown>, setup?: (servers: ServerState[]) => void): Promise<string> {
  router.init({ policy: name, role: 'generation', args });
  await router.start();
  const servers = states();
  setup?.(servers);
  router.onServersUpdated(servers);
  const times: number[] = [];
  for (let i = 0; i < ITER + 100; i++) {
    const r = req();
    const t0 = performance.now();
    await router.getNextServer(r);
    const dt = performance.now() - t0;
    if (i >= 100) times.push(dt); // warm-up
    // Not awaited, as the app does not: a KV poll's wait for its gap is no part of a decision.
    router.finishRequest(r).catch(() => undefined);
  }
  await router.close();
  times.sort((a, b) => a - b);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  return `| ${name} | ${(mean * 1000).toFixed(0)} | ${(times[Math.floor(times.length / 2)] * 1000).toFixed(0)} | ${(times[Math.floor(times.length * 0.99)] * 1000).toFixed(0)} |`;
}

/** The same tables pushed as per-rank reports (2 ranks per server) to a centralized router's endpoint. */
function measureCentralized(base: Record<string, unknown>): Promise<string> {
  const router = new CentralizedKvCacheAwareRouter(new KvReportEndpoints());
  const args = centralizedKvCacheAwareArgs.parse({ router_port: 0, router_host: '127.0.0.1', load_weight: 0.25, rank_routing_algo: 'instance', fair_share_multiplier: 2, match_rate_threshold: 0.1, load_suspend_s: 3600, stale_timeout_s: 3600, tokens_per_block: 32, ...base });
  return measure('centralized_kv_cache_aware', router, args, (servers) => {
    const state = (router as unknown as { endpoint: KvReportEndpoint }).endpoint.state;
    servers.forEach((s, i) => {
      s.serverInfo = { worker_id: `w${i}` };
      for (let rank = 0; rank < 2; rank++) {
        const workerId = `w${i}:rank${rank}`;
        const hashes = rank === 0 ? [...s.kvTable().keys()] : [];
        state.apply({ kind: 'events', workerId, namespace: 'gen', seq: 0, isFullSnapshot: true, sendTs: 0, events: [{ type: 'stored', hashes }] });
        state.apply({ kind: 'load', workerId, namespace: 'gen', seq: 0, numActiveRequests: rank, numQueuedRequests: 0, maxBatchSize: 64, numActiveTokens: 0 });
      }
    });
  });
}

async function tokenizationCost(): Promise<string[]> {
  const qwen = getTokenizer('qwen3');
  const words = ['router', 'cache', 'prefill', 'decode', 'token', 'block', 'server', 'request'];
  let text = '';
  while (qwen.encode(text).length < TOKENS) text += Array.from({ length: 200 }, (_, i) => words[(i * 5 + text.length) % words.length] + (i % 17)).join(' ') + ' ';
  const n = qwen.encode(text).length;
  const rows: string[] = [];
  for (const threads of [0, 1]) {
    const tok = new PromptTokenizer({ tokenizer: 'qwen3', tokenizer_threads: threads });
    await tok.tokenize({ kind: 'completion', body: { prompt: text } });
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) {
      await tok.tokenize({ kind: 'completion', body: { prompt: text + i } });
      await new Promise((r) => setImmediate(r));
    }
    const per = (performance.now() - t0) / 20;
    h.disable();
    await tok.close();
    rows.push(`| ${threads ? 'worker thread' : 'inline (event loop)'} | ${n} | ${per.toFixed(1)} | ${(h.max / 1e6).toFixed(1)} |`);
  }
  return rows;
}

async function main(): Promise<void> {
  const base = { tokenizer: 'bytes', tokenizer_threads: 0 };
  const rows = [
    await measure('round_robin', new RoundRobinRouter(), {}),
    await measure('load_balancing', new LoadBalancingRouter(), loadBalancingArgs.parse({ use_tokens: true, ...base })),
    await measure('kv_cache_aware', new KvCacheAwareRouter(kvRoom(session).poller), kvCacheAwareArgs.parse({ use_tokens: false, max_batch_size: 64, tokens_per_block: 32, backfill_block_hashes_on_finish: false, kv_events_poll_interval_s: 0, kv_events_timeout_s: 1, ...base })),
    await measure('conversation', new ConversationRouter(), conversationArgs.parse({ match_threshold: 0.75, tokens_per_block: 128, use_token_ids: false, hash_skip_count: 0, max_sessions: 100_000, ...base })),
    await measureCentralized(base),
  ];
  process.stdout.write(`routing decision for a ${TOKENS}-token prompt given as token ids, ${SERVERS} servers, ${ITER} decisions:\n\n`);
  process.stdout.write(['| policy | mean us | p50 us | p99 us |', '|---|---|---|---|', ...rows].join('\n') + '\n\n');
  process.stdout.write(`tokenizing a text prompt with qwen3 (20 requests, one at a time):\n\n`);
  process.stdout.write(['| where | tokens | ms per request | longest event-loop stall ms |', '|---|---|---|---|', ...(await tokenizationCost())].join('\n') + '\n');
}

if (require.main === module) runScript(main);
