import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRouterApp } from '../../src/app.factory';
import { buildConfig, ConfigError, loadConfigFile } from '../../src/config';

const dir = mkdtempSync(join(tmpdir(), 'disagg-config-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('config loading', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a TensorRT-LLM disagg config file unchanged, ignoring worker-only keys', () => {
    const path = file('trtllm.yaml', `
hostname: localhost
port: 8000
backend: pytorch
context_servers:
  num_instances: 2
  tensor_parallel_size: 1
  urls: ["localhost:8001", "localhost:8002"]
  max_batch_size: 16
  kv_cache_config: {tokens_per_block: 64, free_gpu_memory_fraction: 0.5}
generation_servers:
  num_instances: 1
  urls: ["localhost:8003"]
  router: {type: kv_cache_aware, use_tokens: false}
conditional_disagg_config: {max_local_prefill_length: 512}
`);
    const config = loadConfigFile(path, {});
    expect(config.context_servers?.urls).toEqual(['localhost:8001', 'localhost:8002']);
    expect(config.generation_servers?.router).toEqual({ type: 'kv_cache_aware', use_tokens: false });
    expect(config.max_retries).toBe(1);
    expect(config.timeouts.request_s).toBe(180);
    expect(config.limits.max_body_bytes).toBe(32 * 1024 * 1024);
    expect(config.conditional_disagg_config?.max_local_prefill_length).toBe(512);
  });

  it('names the file and the key of a bad value', () => {
    const path = file('bad-port.yaml', 'port: "eighty"\ngeneration_servers: {urls: ["h:1"]}\n');
    expect(() => loadConfigFile(path, {})).toThrow(ConfigError);
    expect(() => loadConfigFile(path, {})).toThrow(new RegExp(`${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[\\s\\S]*port:`));
  });

  it('names a nested key, and a typo in the router own sections', () => {
    expect(() => buildConfig({ generation_servers: { urls: ['h:1'] }, timeouts: { request_sec: 3 } })).toThrow(/timeouts: Unrecognized key.*request_sec/);
    expect(() => buildConfig({ generation_servers: { urls: 'h:1' } })).toThrow(/generation_servers\.urls/);
  });

  it('refuses inconsistent instance counts', () => {
    expect(() => buildConfig({ generation_servers: { num_instances: 2, urls: ['h:1'] } })).toThrow(/generation_servers\.num_instances: is 2 but generation_servers\.urls lists 1/);
  });

  it('refuses a config without generation servers nor discovery', () => {
    expect(() => buildConfig({ context_servers: { urls: ['h:1'] } })).toThrow(/generation_servers\.urls/);
  });

  it('reports unreadable files and bad YAML with the path', () => {
    expect(() => loadConfigFile(join(dir, 'missing.yaml'), {})).toThrow(/cannot read config file .*missing\.yaml/);
    const path = file('broken.yaml', 'port: [1,\n');
    expect(() => loadConfigFile(path, {})).toThrow(/broken\.yaml is not valid YAML/);
  });

  it('applies env overrides for host, port and admin token', () => {
    const path = file('env.yaml', 'generation_servers: {urls: ["h:1"]}\n');
    const config = loadConfigFile(path, { DISAGG_HOST: '0.0.0.0', DISAGG_PORT: '9100', DISAGG_ADMIN_TOKEN: 'a-long-enough-admin-token' });
    expect(config.hostname).toBe('0.0.0.0');
    expect(config.port).toBe(9100);
    expect(config.admin.token).toBe('a-long-enough-admin-token');
  });

  it('the shipped default and example configs are valid', () => {
    expect(loadConfigFile('config/default.yaml', {}).simulate).toBeDefined();
    const example = loadConfigFile('config/example.yaml', {});
    expect(example.generation_servers?.urls?.length).toBeGreaterThan(0);
  });

  it('the example config boots: every router argument in it is valid', async () => {
    const app = await createRouterApp(loadConfigFile('config/example.yaml', {}), { logger: false });
    await app.init();
    await app.close();
  });

  it('an unknown routing policy refuses to start, listing the available ones', async () => {
    const config = buildConfig({ generation_servers: { urls: ['127.0.0.1:1'], router: { type: 'fastest_please' } } });
    await expect(createRouterApp(config, { logger: false }).then((app) => app.init())).rejects.toThrow(
      /generation_servers\.router\.type: unknown routing policy 'fastest_please'; available: .*round_robin/,
    );
  });

  it('bad policy argument values refuse to start, naming the key', async () => {
    const config = buildConfig({ generation_servers: { urls: ['127.0.0.1:1'], router: { type: 'load_balancing', use_tokens: 'yes' } } });
    await expect(createRouterApp(config, { logger: false }).then((app) => app.init())).rejects.toThrow(/load_balancing.*use_tokens/);
  });
});
