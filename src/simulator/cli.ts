/**
 * Runs simulated workers standalone:
 *   npm run sim -- --role context --port 8001 [--count N] [--latency demo|zero]
 *                  [--kv-blocks N] [--tokens-per-block N] [--kv-hash-algo v1_block_key|v2_sha256|v2_sha256_64]
 *                  [--host H] [--model NAME]
 *                  [--tokenizer qwen3|bytes] [--ctx-check blind|registry]
 *                  [--prefill-ms-per-token X] [--decode-ms-per-token X] [--max-batch-size N]
 *                  [--disagg-cluster URI [--cluster-name NAME]] [--no-msgpack]
 *                  [--dp-ranks N] [--kv-report-address tcp://HOST:PORT]
 * --no-msgpack plays a worker older than TensorRT-LLM's msgpack bodies: it answers them 400.
 * With --kv-report-address each worker pushes its KV events and load to a centralized KV router
 * there (one report stream per data-parallel rank), signed with TLLM_CENTRALIZED_ROUTER_HMAC_KEY
 * when it is set, as TensorRT-LLM's workers do.
 * With --disagg-cluster each worker registers itself in that disagg_cluster and heartbeats,
 * as TensorRT-LLM's workers do (with env DISAGG_CLUSTER_API_KEY as the storage's bearer token). Workers of one process share a context registry; across processes use --ctx-check blind
 * (the default here). Stops on SIGINT/SIGTERM.
 */
import { ClusterWorkerRegistration, type ClusterWorkerOptions } from '../discovery/cluster/cluster-worker-registration';
import { isKvHashAlgo, KV_HASH_ALGOS } from '../kv-cache/hash-algos';
import { hmacKeyFromEnv } from '../kv-events-zmq/report-frame';
import { CtxRegistry } from './ctx-registry';
import { LatencyOptions, LatencyPreset, resolveLatency } from './latency-model';
import { CtxCheck, SIM_ROLES, SimRole } from './sim-options';
import { SimWorker } from './sim-worker';

interface CliArgs {
  role: SimRole;
  host: string;
  port: number;
  count: number;
  latency: LatencyPreset;
  latencyOverrides: Partial<LatencyOptions>;
  kvBlocks?: number;
  tokensPerBlock?: number;
  kvHashAlgo?: string;
  model?: string;
  tokenizer?: string;
  ctxCheck: CtxCheck;
  /** Register the workers in this disagg_cluster (cluster_uri) and heartbeat them. */
  disaggCluster?: string;
  clusterName?: string;
  dpRanks?: number;
  /** Push KV reports to this centralized KV router endpoint. */
  kvReportAddress?: string;
  /** false: answer msgpack bodies 400, as an older TensorRT-LLM worker does. */
  msgpack: boolean;
}

const USAGE =
  'usage: sim --role context|generation|mixed --port N [--count N] [--latency zero|demo] [--kv-blocks N] ' +
  '[--tokens-per-block N] [--kv-hash-algo v1_block_key|v2_sha256|v2_sha256_64] [--host H] [--model NAME] [--tokenizer qwen3|bytes] [--ctx-check blind|registry] ' +
  '[--prefill-ms-per-token X] [--decode-ms-per-token X] [--max-batch-size N] [--disagg-cluster URI [--cluster-name NAME]] [--no-msgpack] [--dp-ranks N] [--kv-report-address tcp://HOST:PORT]';

export function parseCliArgs(argv: string[]): CliArgs {
  const args: CliArgs = { role: 'mixed', host: '127.0.0.1', port: 8001, count: 1, latency: 'zero', latencyOverrides: {}, ctxCheck: 'blind', msgpack: true };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
      return v;
    };
    const num = (): number => {
      const raw = value();
      const n = Number(raw);
      if (!Number.isFinite(n) || n < 0) throw new Error(`${flag} needs a non-negative number, got "${raw}"`);
      return n;
    };
    switch (flag) {
      case '--role': {
        const r = value();
        if (!(SIM_ROLES as readonly string[]).includes(r)) throw new Error(`--role must be one of ${SIM_ROLES.join(', ')}`);
        args.role = r as SimRole;
        break;
      }
      case '--host': args.host = value(); break;
      case '--port': args.port = num(); break;
      case '--count': args.count = Math.max(1, Math.floor(num())); break;
      case '--latency': {
        const l = value();
        if (l !== 'zero' && l !== 'demo') throw new Error('--latency must be zero or demo');
        args.latency = l;
        break;
      }
      case '--kv-blocks': args.kvBlocks = num(); break;
      case '--tokens-per-block': args.tokensPerBlock = num(); break;
      case '--kv-hash-algo': {
        const a = value();
        if (!isKvHashAlgo(a)) throw new Error(`--kv-hash-algo must be one of ${KV_HASH_ALGOS.join(', ')}`);
        args.kvHashAlgo = a;
        break;
      }
      case '--model': args.model = value(); break;
      case '--tokenizer': args.tokenizer = value(); break;
      case '--ctx-check': {
        const c = value();
        if (c !== 'blind' && c !== 'registry') throw new Error('--ctx-check must be blind or registry');
        args.ctxCheck = c;
        break;
      }
      case '--prefill-ms-per-token': args.latencyOverrides.prefillMsPerToken = num(); break;
      case '--decode-ms-per-token': args.latencyOverrides.decodeMsPerToken = num(); break;
      case '--max-batch-size': args.latencyOverrides.maxBatchSize = num(); break;
      case '--disagg-cluster': {
        const uri = value();
        if (!/^(https?|etcd):\/\/[^/]+/i.test(uri)) throw new Error('--disagg-cluster must be an http://, https:// or etcd:// URI');
        args.disaggCluster = uri;
        break;
      }
      case '--cluster-name': args.clusterName = value(); break;
      case '--dp-ranks': args.dpRanks = Math.max(1, Math.floor(num())); break;
      case '--kv-report-address': {
        const address = value();
        if (!/^tcp:\/\/[^/]+:\d+$/.test(address)) throw new Error('--kv-report-address must be tcp://HOST:PORT');
        args.kvReportAddress = address;
        break;
      }
      case '--no-msgpack': args.msgpack = false; break;
      case '-h':
      case '--help':
        throw new Error(USAGE);
      default:
        throw new Error(`unknown option ${flag}\n${USAGE}`);
    }
  }
  if (args.disaggCluster && args.role === 'mixed') throw new Error(`--disagg-cluster needs --role context or generation\n${USAGE}`);
  return args;
}

async function main(): Promise<void> {
  let args: CliArgs;
  try {
    args = parseCliArgs(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  const latency = { ...resolveLatency(args.latency), ...args.latencyOverrides };
  const registry = args.ctxCheck === 'registry' ? new CtxRegistry() : undefined;
  const workers: SimWorker[] = [];
  const registrations: ClusterWorkerRegistration[] = [];
  try {
    for (let i = 0; i < args.count; i++) {
      const w = await SimWorker.start({
        role: args.role,
        host: args.host,
        port: args.port === 0 ? 0 : args.port + i,
        latency,
        kvBlocks: args.kvBlocks,
        tokensPerBlock: args.tokensPerBlock,
        kvHashAlgo: args.kvHashAlgo,
        model: args.model,
        tokenizer: args.tokenizer,
        ctxCheck: args.ctxCheck,
        registry,
        preloadTokenizer: true,
        dpRanks: args.dpRanks,
        kvReports: args.kvReportAddress ? { address: args.kvReportAddress, hmacKey: hmacKeyFromEnv(process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY) } : undefined,
        msgpack: args.msgpack,
      });
      workers.push(w);
      console.log(`sim ${w.role} worker listening on ${w.url}`);
      if (args.disaggCluster) registrations.push(await registerInCluster(w, args.disaggCluster, args.clusterName));
    }
  } catch (err) {
    console.error(`could not start simulated workers: ${(err as Error).message}`);
    await Promise.all(registrations.map((r) => r.close()));
    await Promise.all(workers.map((w) => w.close()));
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: stopping ${workers.length} simulated worker(s)`);
    void Promise.all(registrations.map((r) => r.close()))
      .then(() => Promise.all(workers.map((w) => w.close())))
      .then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

/** Registers a context or generation worker in a disagg_cluster (a mixed one cannot join). */
export function registerInCluster(
  worker: SimWorker,
  clusterUri: string,
  clusterName = '',
  options: Pick<ClusterWorkerOptions, 'heartbeatIntervalS' | 'inactiveTimeoutS' | 'apiKey' | 'log'> = {},
): Promise<ClusterWorkerRegistration> {
  if (worker.role === 'mixed') throw new Error('--disagg-cluster needs --role context or generation');
  const u = new URL(worker.url);
  const log = (m: string): void => console.log(`sim: ${m}`);
  const apiKey = process.env.DISAGG_CLUSTER_API_KEY || undefined;
  return ClusterWorkerRegistration.start({ clusterUri, clusterName, host: u.hostname, port: Number(u.port), role: worker.role, log, apiKey, ...options });
}

// Run only as the entry point (compiled CommonJS); importing it, e.g. from tests, has no effect.
if (typeof require !== 'undefined' && typeof module !== 'undefined' && require.main === module) void main();
