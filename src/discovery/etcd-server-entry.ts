import { normalizeServerUrl, SERVER_ROLES, type ServerRole } from '../config/server-role';

/** A worker's etcd key, as trtllm-serve writes it: `trtllm/<id>` -> JSON with url and role. */
export interface EtcdServerEntry {
  key: string;
  url: string;
  role: ServerRole;
}

export type ParsedEntry = { ok: true; entry: EtcdServerEntry } | { ok: false; reason: string };

/**
 * Reads one key's value. trtllm-serve writes `server_role` as its enum name (`CONTEXT`,
 * `GENERATION`); `server_type` is accepted as well, as TensorRT-LLM's router does.
 */
export function parseEtcdEntry(key: string, value: string): ParsedEntry {
  let data: unknown;
  try {
    data = JSON.parse(value);
  } catch {
    return { ok: false, reason: 'the value is not JSON' };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { ok: false, reason: 'the value is not a JSON object' };
  const record = data as Record<string, unknown>;
  const rawUrl = record.url;
  if (typeof rawUrl !== 'string' || !rawUrl.trim()) return { ok: false, reason: 'no "url" in the value' };
  let url: string;
  try {
    url = normalizeServerUrl(rawUrl.trim());
    new URL(url);
  } catch {
    return { ok: false, reason: `"url" ${JSON.stringify(rawUrl)} is not a valid address` };
  }
  const rawRole = record.server_type ?? record.server_role;
  const role = typeof rawRole === 'string' ? rawRole.toLowerCase() : '';
  if (!(SERVER_ROLES as readonly string[]).includes(role)) {
    return { ok: false, reason: `role ${JSON.stringify(rawRole ?? null)} is not one this router serves (context or generation)` };
  }
  return { ok: true, entry: { key, url, role: role as ServerRole } };
}

/** The value the register helper writes, in trtllm-serve's format. */
export function etcdEntryValue(url: string, role: ServerRole, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ ...extra, server_role: role.toUpperCase(), url, timestamp: new Date().toISOString() });
}
