import { describe, expect, it } from '@jest/globals';
import { buildConfig } from '../../src/config';

describe('disagg_cluster config', () => {
  it('takes pools without urls and fills TensorRT-LLM defaults', () => {
    const config = buildConfig({ disagg_cluster: { cluster_uri: 'http://localhost:8000' }, context_servers: { num_instances: 2, router: { type: 'conversation' } } });
    expect(config.disagg_cluster).toEqual({
      cluster_uri: 'http://localhost:8000',
      cluster_name: '',
      minimal_instances: { context_servers: 1, generation_servers: 1 },
      heartbeat_interval_sec: 5,
      inactive_timeout_sec: 10,
    });
  });

  it('refuses unknown keys and uris it cannot serve, naming the key', () => {
    expect(() => buildConfig({ disagg_cluster: { cluster_uri: 'http://h:1', inactive_interval_sec: 10 } })).toThrow(/disagg_cluster.*inactive_interval_sec/s);
    expect(() => buildConfig({ disagg_cluster: { cluster_uri: 'redis://h:1' } })).toThrow(/disagg_cluster\.cluster_uri: must start with http/);
    expect(() => buildConfig({ disagg_cluster: { cluster_uri: 'etcd://h:2379', minimal_instances: { context: 1 } } })).toThrow(/minimal_instances/);
  });
});
