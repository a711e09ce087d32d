import { normalizeServerUrl, SERVER_ROLES, type ServerRole } from '../config/server-role';
import { ClusterWorkerRegistration } from './cluster/cluster-worker-registration';
import { WorkerRegistration } from './worker-registration';

const USAGE = `usage: register --etcd host:port --url http://host:port --role context|generation [--key trtllm/NAME] [--ttl 10]
       register --disagg-cluster URI --url http://host:port --role context|generation
                [--cluster-name NAME] [--heartbeat 5] [--inactive-timeout 10] [--api-key KEY]

With --etcd: puts a worker's key into etcd (the way trtllm-serve registers its workers) with a
lease kept alive while this runs, so a router with metadata_server_config routes to the worker.

With --disagg-cluster: registers the worker in a disagg_cluster (URI http(s)://router:port, the
router serving the cluster storage, or etcd://host:port) and heartbeats it every --heartbeat
seconds, as TensorRT-LLM's workers do; the router drops it --inactive-timeout seconds after
the heartbeats stop. --api-key (or env DISAGG_CLUSTER_API_KEY) is the router's
disagg_cluster.api_key, sent as a bearer token (never over plain http off loopback). Either way the registration is removed on SIGINT/SIGTERM.`;

type CliArgs =
  | { mode: 'etcd'; etcd: string; url: string; role: ServerRole; key?: string; ttl: number }
  | { mode: 'cluster'; clusterUri: string; url: string; role: ServerRole; clusterName: string; heartbeat: number; inactiveTimeout: number; apiKey?: string };

const FLAGS = ['--etcd', '--url', '--role', '--key', '--ttl', '--disagg-cluster', '--cluster-name', '--heartbeat', '--inactive-timeout', '--api-key'];

export function parseRegisterArgs(argv: readonly string[], env: NodeJS.ProcessEnv = {}): CliArgs {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') throw new UsageError('');
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (!FLAGS.includes(name)) throw new UsageError(`unknown argument ${arg}`);
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') throw new UsageError(`${name} needs a value`);
    values.set(name.slice(2), value);
  }
  const etcd = values.get('etcd');
  const clusterUri = values.get('disagg-cluster');
  const url = values.get('url');
  const role = values.get('role')?.toLowerCase();
  if (etcd && clusterUri) throw new UsageError('--etcd and --disagg-cluster exclude each other');
  if (!etcd && !clusterUri) throw new UsageError('--etcd or --disagg-cluster is required');
  if (!url) throw new UsageError('--url is required');
  if (!role || !(SERVER_ROLES as readonly string[]).includes(role)) throw new UsageError('--role must be context or generation');
  const only = (mode: string, names: string[]): void => {
    for (const n of names) if (values.has(n)) throw new UsageError(`--${n} needs ${mode}`);
  };
  if (etcd) {
    only('--disagg-cluster', ['cluster-name', 'heartbeat', 'inactive-timeout', 'api-key']);
    const ttl = Number(values.get('ttl') ?? 10);
    if (!Number.isInteger(ttl) || ttl < 1) throw new UsageError('--ttl must be a whole number of seconds, at least 1');
    return { mode: 'etcd', etcd, url, role: role as ServerRole, key: values.get('key'), ttl };
  }
  only('--etcd', ['key', 'ttl']);
  if (!/^(https?|etcd):\/\/[^/]+/i.test(clusterUri!)) throw new UsageError('--disagg-cluster must be an http://, https:// or etcd:// URI');
  const heartbeat = Number(values.get('heartbeat') ?? 5);
  const inactiveTimeout = Number(values.get('inactive-timeout') ?? 10);
  if (!(heartbeat > 0)) throw new UsageError('--heartbeat must be a positive number of seconds');
  if (!(inactiveTimeout > heartbeat)) throw new UsageError('--inactive-timeout must be longer than --heartbeat');
  const apiKey = values.get('api-key') ?? (env.DISAGG_CLUSTER_API_KEY || undefined);
  return { mode: 'cluster', clusterUri: clusterUri!, url, role: role as ServerRole, clusterName: values.get('cluster-name') ?? '', heartbeat, inactiveTimeout, apiKey };
}

class UsageError extends Error {}

async function register(args: CliArgs, log: (m: string) => void): Promise<{ key: string; close(): Promise<void> }> {
  if (args.mode === 'etcd') {
    return WorkerRegistration.start({ etcd: args.etcd, url: args.url, role: args.role, key: args.key, ttlS: args.ttl, log });
  }
  const u = new URL(normalizeServerUrl(args.url));
  return ClusterWorkerRegistration.start({
    clusterUri: args.clusterUri,
    clusterName: args.clusterName,
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)),
    role: args.role,
    heartbeatIntervalS: args.heartbeat,
    inactiveTimeoutS: args.inactiveTimeout,
    apiKey: args.apiKey,
    log,
  });
}

async function main(): Promise<void> {
  let args: CliArgs;
  try {
    args = parseRegisterArgs(process.argv.slice(2), process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message) process.stderr.write(`register: ${err.message}\n`);
    process.stderr.write(`${USAGE}\n`);
    process.exit(err.message ? 2 : 0);
  }
  const log = (m: string): void => void process.stderr.write(`register: ${m}\n`);
  // Handlers go in before the first etcd call: the key becomes visible before start() returns,
  // and a signal in that window must still remove it rather than kill the process as is.
  const registering = register(args, log);
  let registered = false;
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    if (!registered) log(`${signal}: removing the registration once etcd has it (signal again to quit at once)`);
    void registering
      .then(async (registration) => {
        log(`${signal}: removing ${registration.key}`);
        await registration.close();
        process.exit(0);
      })
      .catch(() => process.exit(1));
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  await registering;
  registered = true;
}

if (process.argv[1]?.endsWith('register-cli.js')) {
  void main().catch((err: unknown) => {
    process.stderr.write(`register failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
