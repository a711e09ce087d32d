import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { ConfigError } from './config-error';

/**
 * Top-level keys the disaggregated server reads itself (TensorRT-LLM's and this router's own
 * sections). Every other top-level key is a worker setting that TensorRT-LLM copies into both
 * pools, so it reaches the pools' router args (max_batch_size, kv_cache_config, ...).
 */
const OWN_TOP_LEVEL_KEYS = new Set([
  'hostname', 'port', 'max_retries', 'perf_metrics_max_requests', 'return_perf_metrics', 'perf_metrics_output_dir',
  'context_servers', 'generation_servers', 'conditional_disagg_config', 'otlp_config', 'disagg_cluster', 'node_id',
  'schedule_style', 'allow_request_chat_template', 'gen_strip_message_history', 'gen_tokids_ctxbytes', 'num_workers',
  'disagg_coordinator_url', 'metadata_server_config', 'forward_conversation_id',
  'http_session', 'timeouts', 'limits', 'health', 'admin', 'logging', 'metrics', 'perf_metrics', 'shutdown', 'simulate', 'cluster',
]);

const POOLS = ['context_servers', 'generation_servers'] as const;

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Applies TensorRT-LLM's reading of the file before validation: inherited top-level keys are
 * copied into each pool section present, a key given at both levels with different values
 * refuses to start (naming both), `return_perf_metrics` (or `perf_metrics_output_dir`) puts
 * `return_perf_metrics: true` into both pools, and `health_check_timeout` of the metadata server times the
 * workers' health checks unless `health.timeout_s` is set.
 */
export function applyTrtllmSemantics(raw: Record<string, unknown>, source: string): Record<string, unknown> {
  const out: Record<string, unknown> = { ...raw };
  for (const pool of POOLS) if (isMapping(raw[pool])) out[pool] = { ...raw[pool] };
  for (const [key, value] of Object.entries(raw)) {
    if (OWN_TOP_LEVEL_KEYS.has(key)) continue;
    for (const pool of POOLS) {
      const section = out[pool];
      if (!isMapping(section)) continue;
      if (!(key in section)) section[key] = value;
      else if (!isDeepStrictEqual(section[key], value)) {
        throw new ConfigError(
          `invalid config ${source}:\n  ${key} and ${pool}.${key}: given at the top level (${JSON.stringify(value)}) and in ${pool} (${JSON.stringify(section[key])}) with different values`,
        );
      }
    }
  }
  // As TensorRT-LLM: the workers must return their metrics when the router exposes or writes them,
  // so the switch overrides a pool's own false rather than conflicting with it.
  if (raw.return_perf_metrics === true || (raw.perf_metrics_output_dir !== undefined && raw.perf_metrics_output_dir !== null)) {
    for (const pool of POOLS) if (isMapping(out[pool])) (out[pool] as Record<string, unknown>).return_perf_metrics = true;
  }
  const meta = raw.metadata_server_config;
  const health = isMapping(raw.health) ? raw.health : undefined;
  if (isMapping(meta) && typeof meta.health_check_timeout === 'number' && health?.timeout_s === undefined) {
    out.health = { ...(health ?? {}), timeout_s: meta.health_check_timeout };
  }
  return out;
}

/** The file of `-m/--metadata_server_config_file`, keyed exactly as TensorRT-LLM's dataclass. */
export const metadataServerFileSchema = z.strictObject({
  server_type: z.literal('etcd'),
  hostname: z.string().optional(),
  port: z.number().int().min(1).max(65535).optional(),
  health_check_timeout: z.number().positive().optional(),
  refresh_interval: z.number().positive().optional(),
});
export type MetadataServerFile = z.output<typeof metadataServerFileSchema>;

export function parseMetadataServerFile(raw: unknown, source: string): MetadataServerFile {
  const parsed = metadataServerFileSchema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((i) => {
    const keys = 'keys' in i && Array.isArray(i.keys) ? i.keys.join(', ') : '';
    const key = i.path.length ? i.path.map(String).join('.') : keys || '(top level)';
    return `  ${key}: ${i.message}`;
  });
  throw new ConfigError(`invalid metadata server config ${source}:\n${lines.join('\n')}`);
}
