import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { ConfigError } from './config-error';
import { AppConfig, AppConfigInput, routerConfigSchema } from './config.schema';
import { SERVER_ROLES } from './server-role';
import { applyTrtllmSemantics } from './trtllm-semantics';
import { clusterStorageScopeProblem } from './cluster-storage-scope';

/** Changes on top of the file and the env (command-line flags), applied before validation. */
export type ConfigOverrides = (raw: AppConfigInput) => AppConfigInput;

export const DEFAULT_CONFIG_PATH = 'config/default.yaml';

export function loadConfigFile(path: string, env: NodeJS.ProcessEnv = process.env, overrides?: ConfigOverrides): AppConfig {
  const file = resolve(path);
  return buildConfig(readYamlFile(file, 'config file'), file, env, overrides);
}

/** Reads and parses a YAML file; errors name the file. */
export function readYamlFile(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read ${what} ${file}: ${(err as Error).message}`);
  }
  try {
    return parseYaml(text) ?? {};
  } catch (err) {
    throw new ConfigError(`${what} ${file} is not valid YAML: ${(err as Error).message}`);
  }
}

/** Validates a config object (from YAML or from code), applies env overrides, checks consistency. */
export function buildConfig(
  raw: unknown,
  source = '<inline config>',
  env: NodeJS.ProcessEnv = {},
  overrides?: ConfigOverrides,
): AppConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`config ${source}: the top level must be a mapping of keys`);
  }
  const inherited = applyTrtllmSemantics(raw as Record<string, unknown>, source) as AppConfigInput;
  const withEnv = applyEnvOverrides(inherited, env);
  const parsed = routerConfigSchema.safeParse(overrides ? overrides(withEnv) : withEnv);
  if (!parsed.success) throw new ConfigError(formatIssues(parsed.error.issues, source));
  checkConsistency(parsed.data, source);
  return parsed.data;
}

function applyEnvOverrides(raw: AppConfigInput, env: NodeJS.ProcessEnv): AppConfigInput {
  const out: AppConfigInput = { ...raw };
  if (env.DISAGG_HOST) out.hostname = env.DISAGG_HOST;
  if (env.DISAGG_PORT) out.port = Number(env.DISAGG_PORT);
  if (env.DISAGG_ADMIN_TOKEN) out.admin = { ...(raw.admin ?? {}), token: env.DISAGG_ADMIN_TOKEN };
  if (env.DISAGG_CLUSTER_API_KEY && raw.disagg_cluster) out.disagg_cluster = { ...raw.disagg_cluster, api_key: env.DISAGG_CLUSTER_API_KEY };
  if (env.DISAGG_REPLICA_ID && raw.cluster) out.cluster = { ...raw.cluster, replica_id: env.DISAGG_REPLICA_ID };
  if (env.DISAGG_LOG_LEVEL) {
    out.logging = { ...(raw.logging ?? {}), level: env.DISAGG_LOG_LEVEL as 'info' };
  }
  return out;
}

function formatIssues(issues: readonly z.core.$ZodIssue[], source: string): string {
  const lines = issues.map((issue) => {
    const key = issue.path.length ? issue.path.map(String).join('.') : '(top level)';
    return `  ${key}: ${issue.message}`;
  });
  return `invalid config ${source}:\n${lines.join('\n')}`;
}

function checkConsistency(config: AppConfig, source: string): void {
  if (config.perf_metrics_max_requests > 0 && config.perf_metrics.max_requests > 0) {
    throw new ConfigError(
      `invalid config ${source}:\n  perf_metrics_max_requests and perf_metrics.max_requests: give one (TensorRT-LLM's format or this router's)`,
    );
  }
  for (const role of SERVER_ROLES) {
    const key = `${role}_servers` as const;
    const pool = config[key];
    if (!pool?.urls || pool.num_instances === undefined) continue;
    if (pool.num_instances !== pool.urls.length) {
      throw new ConfigError(
        `invalid config ${source}:\n  ${key}.num_instances: is ${pool.num_instances} but ${key}.urls lists ${pool.urls.length} servers`,
      );
    }
  }
  const scope = clusterStorageScopeProblem(config);
  if (scope) throw new ConfigError(`invalid config ${source}:\n  ${scope}`);
  const hasGeneration = (config.generation_servers?.urls?.length ?? 0) > 0;
  const discovered = config.metadata_server_config !== undefined || config.disagg_cluster !== undefined || config.simulate !== undefined;
  if (!hasGeneration && !discovered) {
    throw new ConfigError(
      `invalid config ${source}:\n  generation_servers.urls: at least one generation server is required (or metadata_server_config / disagg_cluster / simulate)`,
    );
  }
}
