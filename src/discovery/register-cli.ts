import { SERVER_ROLES, type ServerRole } from '../config/server-role';
import { WorkerRegistration } from './worker-registration';

const USAGE = `usage: register --etcd host:port --url http://host:port --role context|generation [--key trtllm/NAME] [--ttl 10]

Puts a worker's key into etcd (the way trtllm-serve registers its workers) with a lease kept
alive while this runs, so a router with metadata_server_config routes to the worker. The key
is removed on SIGINT/SIGTERM.`;

interface CliArgs {
  etcd: string;
  url: string;
  role: ServerRole;
  key?: string;
  ttl: number;
}

export function parseRegisterArgs(argv: readonly string[]): CliArgs {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') throw new UsageError('');
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (!['--etcd', '--url', '--role', '--key', '--ttl'].includes(name)) throw new UsageError(`unknown argument ${arg}`);
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') throw new UsageError(`${name} needs a value`);
    values.set(name.slice(2), value);
  }
  const etcd = values.get('etcd');
  const url = values.get('url');
  const role = values.get('role')?.toLowerCase();
  if (!etcd) throw new UsageError('--etcd is required');
  if (!url) throw new UsageError('--url is required');
  if (!role || !(SERVER_ROLES as readonly string[]).includes(role)) throw new UsageError('--role must be context or generation');
  const ttl = Number(values.get('ttl') ?? 10);
  if (!Number.isInteger(ttl) || ttl < 1) throw new UsageError('--ttl must be a whole number of seconds, at least 1');
  return { etcd, url, role: role as ServerRole, key: values.get('key'), ttl };
}

class UsageError extends Error {}

async function main(): Promise<void> {
  let args: CliArgs;
  try {
    args = parseRegisterArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message) process.stderr.write(`register: ${err.message}\n`);
    process.stderr.write(`${USAGE}\n`);
    process.exit(err.message ? 2 : 0);
  }
  const log = (m: string): void => void process.stderr.write(`register: ${m}\n`);
  const registration = await WorkerRegistration.start({ etcd: args.etcd, url: args.url, role: args.role, key: args.key, ttlS: args.ttl, log });
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: removing ${registration.key}`);
    void registration.close().then(() => process.exit(0));
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

if (process.argv[1]?.endsWith('register-cli.js')) {
  void main().catch((err: unknown) => {
    process.stderr.write(`register failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
