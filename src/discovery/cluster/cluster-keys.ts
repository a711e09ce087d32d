import { isIP } from 'node:net';
// Not the config barrel: the register helper must load without Nest.
import type { ServerRole } from '../../config/server-role';

/**
 * The key layout and worker record of TensorRT-LLM's disagg_cluster: every worker keeps
 * `/trtllm-disagg/<cluster_name>/workers/<worker_id>` holding
 * `{"worker_id", "host", "port", "role"}`, role being 0 (context) or 1 (generation).
 */
export function workerKeyPrefix(clusterName: string): string {
  return `/trtllm-disagg/${clusterName}/workers`;
}

export function workerKey(clusterName: string, workerId: string): string {
  return `${workerKeyPrefix(clusterName)}/${workerId}`;
}

/** TensorRT-LLM's ServerRole values as they appear in the record. */
const ROLE_CODES: Record<ServerRole, number> = { context: 0, generation: 1 };

export interface ClusterWorker {
  workerId: string;
  host: string;
  port: number;
  role: ServerRole;
  /** `http://host:port`. */
  url: string;
}

export type ParsedWorker = { ok: true; worker: ClusterWorker } | { ok: false; reason: string };

export function parseWorkerRecord(value: string): ParsedWorker {
  let record: unknown;
  try {
    record = JSON.parse(value);
  } catch {
    return { ok: false, reason: 'the value is not JSON' };
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return { ok: false, reason: 'the value is not a JSON object' };
  const { worker_id: workerId, host, port, role } = record as Record<string, unknown>;
  if (typeof workerId !== 'string' || !workerId) return { ok: false, reason: 'no worker_id' };
  if (workerId.length > MAX_WORKER_ID_CHARS) return { ok: false, reason: `a worker_id longer than ${MAX_WORKER_ID_CHARS} characters` };
  if (typeof host !== 'string' || !host) return { ok: false, reason: 'no host' };
  if (!validHost(host)) return { ok: false, reason: `host ${JSON.stringify(host.slice(0, 64))}${host.length > 64 ? '...' : ''} is neither a host name nor an IP address` };
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) return { ok: false, reason: 'no valid port' };
  const parsedRole = roleOf(role);
  if (!parsedRole) return { ok: false, reason: `role ${JSON.stringify(role)} is neither context (0) nor generation (1)` };
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return { ok: true, worker: { workerId, host, port, role: parsedRole, url: `http://${bracketed}:${port}` } };
}

const MAX_WORKER_ID_CHARS = 256;
/** DNS labels (underscores allowed, as some resolvers do), at most 253 characters in all. */
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;

function validHost(host: string): boolean {
  return isIP(host.replace(/^\[(.*)\]$/, '$1')) !== 0 || HOST_NAME.test(host);
}

function roleOf(role: unknown): ServerRole | undefined {
  if (role === 0 || role === 'context' || role === 'CONTEXT') return 'context';
  if (role === 1 || role === 'generation' || role === 'GENERATION') return 'generation';
  return undefined;
}

/** The record a worker writes, in TensorRT-LLM's field order. */
export function workerRecord(workerId: string, host: string, port: number, role: ServerRole): string {
  return JSON.stringify({ worker_id: workerId, host, port, role: ROLE_CODES[role] });
}

/** The record as /cluster_info shows it (`current_workers`). */
export function workerInfoJson(worker: ClusterWorker): Record<string, unknown> {
  return { worker_id: worker.workerId, host: worker.host, port: worker.port, role: ROLE_CODES[worker.role] };
}

/** `CONTEXT-host:port-<ms>-<pid>-<nnn>`, the id format of TensorRT-LLM's workers. */
export function newWorkerId(role: ServerRole, host: string, port: number): string {
  const random = String(Math.floor(Math.random() * 1000)).padStart(3, '0');
  return `${role.toUpperCase()}-${host}:${port}-${Date.now()}-${process.pid}-${random}`;
}

/** `etcd://h1:2379,etcd://h2:2379` (or `etcd://h1:2379,h2:2379`) as the client's `h:p,h:p`. */
export function etcdHostsOf(clusterUri: string): string {
  return clusterUri
    .split(',')
    .map((part) => part.trim().replace(/^etcd:\/\//i, '').replace(/\/.*$/, ''))
    .filter(Boolean)
    .join(',');
}
