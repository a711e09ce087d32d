import { describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRouterApp } from '../../src/app.factory';
import { configFromCli } from '../../src/cli/cli-config';
import { buildConfig, ConfigError, parseMetadataServerFile } from '../../src/config';
import { RouterRegistry } from '../../src/routing';
import { splitRouterArgs } from '../../src/routing/trtllm-router-args';
import { LogCapture } from '../observability/log-capture';
import { tempDir } from '../support/temp-dirs';

const gen = { urls: ['127.0.0.1:1'] };

function file(name: string, text: string): string {
  const path = join(tempDir('disagg-sem-'), name);
  writeFileSync(path, text);
  return path;
}

describe("config read as TensorRT-LLM's extract_disagg_cfg reads it", () => {
  it('copies top-level worker keys into both pools; the pools keep their own', () => {
    const config = buildConfig({
      max_batch_size: 8,
      kv_cache_config: { tokens_per_block: 16 },
      backend: 'pytorch',
      context_servers: { urls: ['127.0.0.1:2'], backend: 'pytorch' },
      generation_servers: { ...gen, max_num_tokens: 512 },
    });
    expect(config.context_servers).toMatchObject({ max_batch_size: 8, kv_cache_config: { tokens_per_block: 16 }, backend: 'pytorch' });
    expect(config.generation_servers).toMatchObject({ max_batch_size: 8, max_num_tokens: 512 });
    // The router's own keys are not copied.
    expect(config.generation_servers).not.toHaveProperty('hostname');
  });

  it('return_perf_metrics or perf_metrics_output_dir puts return_perf_metrics: true into both pools, over their own false', () => {
    for (const top of [{ return_perf_metrics: true }, { perf_metrics_output_dir: '/tmp/perf' }]) {
      const config = buildConfig({ ...top, context_servers: { urls: ['127.0.0.1:2'], return_perf_metrics: false }, generation_servers: gen });
      expect(config.context_servers).toMatchObject({ return_perf_metrics: true });
      expect(config.generation_servers).toMatchObject({ return_perf_metrics: true });
    }
    const off = buildConfig({ return_perf_metrics: false, generation_servers: gen });
    expect(off.generation_servers).not.toHaveProperty('return_perf_metrics');
    // A pool that is not configured is not created by it.
    expect(buildConfig({ return_perf_metrics: true, generation_servers: gen }).context_servers).toBeUndefined();
    expect(() => buildConfig({ return_perf_metrics: 'yes', generation_servers: gen } as never)).toThrow(ConfigError);
  });

  it('refuses a key given at the top level and in a pool with different values, naming both', () => {
    expect(() => buildConfig({ max_batch_size: 8, generation_servers: { ...gen, max_batch_size: 16 } })).toThrow(
      /max_batch_size and generation_servers\.max_batch_size: given at the top level \(8\) and in generation_servers \(16\)/,
    );
    expect(() => buildConfig({ kv_cache_config: { a: 1 }, generation_servers: { ...gen, kv_cache_config: { a: 1 } } })).not.toThrow();
  });

  it('internal_request_auth_key is the router own key (not copied into the pools); empty refuses; sub-agent affinity needs it', () => {
    const config = buildConfig({ internal_request_auth_key: 'k', conversation_affinity_header_for_subagents: 'X-Parent', generation_servers: gen });
    expect(config.internal_request_auth_key).toBe('k');
    expect(config.subagent_affinity_scope).toBe('context');
    expect(config.generation_servers).not.toHaveProperty('internal_request_auth_key');
    expect(() => buildConfig({ internal_request_auth_key: '', generation_servers: gen })).toThrow(/internal_request_auth_key: must be a non-empty string/);
    // null is no key, as in TensorRT-LLM.
    expect(buildConfig({ internal_request_auth_key: null, generation_servers: gen }).internal_request_auth_key).toBeNull();
    expect(() => buildConfig({ conversation_affinity_header_for_subagents: 'X-Parent', generation_servers: gen })).toThrow(
      /conversation_affinity_header_for_subagents: needs internal_request_auth_key/,
    );
    expect(() => buildConfig({ subagent_affinity_scope: 'everywhere', generation_servers: gen })).toThrow(/subagent_affinity_scope/);
  });

  it('times the workers checks with the metadata server health_check_timeout unless health.timeout_s is set', () => {
    const meta = { server_type: 'etcd', health_check_timeout: 1.5 };
    expect(buildConfig({ metadata_server_config: meta }).health.timeout_s).toBe(1.5);
    expect(buildConfig({ metadata_server_config: meta, health: { timeout_s: 4 } }).health.timeout_s).toBe(4);
  });

  it('reads -m FILE with the keys of TensorRT-LLM: server_type required, an unknown key refuses naming it', () => {
    expect(parseMetadataServerFile({ server_type: 'etcd', hostname: 'h', port: 2380, health_check_timeout: 2, refresh_interval: 3 }, 'm.yaml'))
      .toEqual({ server_type: 'etcd', hostname: 'h', port: 2380, health_check_timeout: 2, refresh_interval: 3 });
    expect(() => parseMetadataServerFile({ hostname: 'h' }, 'm.yaml')).toThrow(/m\.yaml:\n {2}server_type:/);
    expect(() => parseMetadataServerFile({ server_type: 'etcd', refresh_intervall: 3 }, 'm.yaml')).toThrow(/refresh_intervall/);
    expect(() => parseMetadataServerFile({ server_type: 'etcd', port: 'x' }, 'm.yaml')).toThrow(/port/);
  });

  it('-m FILE fills metadata_server_config and its timeout; flags win over the file', () => {
    const config = file('c.yaml', 'metadata_server_config: {key_prefix: "x/"}\ntimeouts: {request_s: 5}\n');
    const meta = file('m.yaml', 'server_type: etcd\nhostname: 127.0.0.1\nport: 2390\nhealth_check_timeout: 2.5\nrefresh_interval: 1\n');
    const out = configFromCli({ configPath: config, metadataServerConfigFile: meta, requestTimeout: 9, serverStartTimeout: 7, logLevel: 'warn', port: 0 }, {});
    expect(out.metadata_server_config).toMatchObject({ hostname: '127.0.0.1', port: 2390, refresh_interval: 1, key_prefix: 'x/' });
    expect(out.health).toMatchObject({ timeout_s: 2.5, startup_wait_s: 7 });
    expect(out.timeouts.request_s).toBe(9);
    expect(out.logging.level).toBe('warn');
    const bad = file('bad.yaml', 'server_type: etcd\nttl: 3\n');
    expect(() => configFromCli({ configPath: config, metadataServerConfigFile: bad }, {})).toThrow(ConfigError);
  });

  it('checks node_id, schedule_style and perf_metrics_max_requests', () => {
    expect(buildConfig({ generation_servers: gen, node_id: 7 }).node_id).toBe(7);
    expect(() => buildConfig({ generation_servers: gen, node_id: 256 })).toThrow(/node_id/);
    expect(() => buildConfig({ generation_servers: gen, schedule_style: 'gen_first' })).toThrow(/schedule_style/);
    expect(() => buildConfig({ generation_servers: gen, perf_metrics_max_requests: 5, perf_metrics: { max_requests: 5 } })).toThrow(/give one/);
  });
});

describe('router blocks from a config file', () => {
  it('sorts the keys a policy does not take into TensorRT-LLM arguments and unknown ones', () => {
    const keys = new Set(['use_tokens', 'max_batch_size', 'tokens_per_block', 'track_routed_blocks']);
    expect(splitRouterArgs('kv_cache_aware', keys, { use_tokens: true, use_harmony: true, track_routed_blocks: true, speed: 3 })).toEqual({
      args: { use_tokens: true, track_routed_blocks: true },
      unsupported: ['use_harmony'],
      unknown: ['speed'],
    });
    expect(splitRouterArgs('round_robin', new Set(), { max_num_tokens: 10 })).toEqual({ args: {}, unsupported: ['max_num_tokens'], unknown: [] });
  });

  it('boots with router.type in any case, the pool limits in the args and ignored keys warned about by name', async () => {
    const logs = new LogCapture();
    const app = await createRouterApp(
      buildConfig({
        logging: { level: 'warn' },
        generation_servers: { ...gen, max_batch_size: 12, kv_cache_config: { tokens_per_block: 8 }, router: { type: 'KV_Cache_Aware', extra_knob: 1, use_harmony: true, load_cap: 3 } },
      }),
      { logDestination: logs },
    );
    await app.init();
    try {
      const warnings = logs.lines.map((l) => String(l.msg));
      expect(warnings).toContain("generation_servers.router.extra_knob: not an argument of routing policy 'kv_cache_aware'; ignored");
      expect(warnings).toContain("generation_servers.router.use_harmony: TensorRT-LLM's 'kv_cache_aware' argument is not supported by this router; ignored");
      expect(app.get(RouterRegistry).router('generation').snapshot()).toMatchObject({ policy: 'kv_cache_aware', args: { max_batch_size: 12, tokens_per_block: 8, load_cap: 3 } });
      expect(app.get(RouterRegistry).router('generation').snapshot().args).not.toHaveProperty('extra_knob');
    } finally {
      await app.close();
    }
  });
});
