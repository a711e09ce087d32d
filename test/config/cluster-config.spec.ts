import { describe, expect, it } from '@jest/globals';
import { buildConfig as build, type AppConfigInput } from '../../src/config';

const buildConfig = (input: AppConfigInput, env: NodeJS.ProcessEnv = {}) => build({ generation_servers: { urls: ['http://127.0.0.1:9'] }, ...input }, '<inline config>', env);

describe('cluster config (router replicas)', () => {
  it('is absent by default: a single router needs nothing new', () => {
    expect(buildConfig({}).cluster).toBeUndefined();
  });

  it('fills the defaults', () => {
    expect(buildConfig({ cluster: { bus: 'nats://nats:4222', replica_id: 'router-1' } }).cluster).toEqual({
      bus: 'nats://nats:4222',
      replica_id: 'router-1',
      name: 'disagg',
      lease_ttl_s: 3,
      poll_interval_ms: 100,
      load_interval_ms: 50,
      snapshot_interval_s: 5,
      stream_max_age_s: 600,
    });
  });

  it('takes replica_id from DISAGG_REPLICA_ID, so replicas can share one file', () => {
    expect(buildConfig({ cluster: { bus: 'nats://nats:4222' } }, { DISAGG_REPLICA_ID: 'router-2' }).cluster?.replica_id).toBe('router-2');
    expect(buildConfig({}, { DISAGG_REPLICA_ID: 'router-2' }).cluster).toBeUndefined();
  });

  it('is strict: unknown keys, other schemes and bad ids are refused', () => {
    expect(() => buildConfig({ cluster: { bus: 'nats://nats:4222', replicas: 3 } as never })).toThrow(/replicas/);
    expect(() => buildConfig({ cluster: { bus: 'redis://nats:6379' } })).toThrow(/nats:\/\/host:port/);
    expect(() => buildConfig({ cluster: { bus: 'nats://nats:4222', replica_id: 'a b' } })).toThrow(/replica_id/);
    expect(() => buildConfig({ cluster: { bus: 'nats://nats:4222', lease_ttl_s: 0.2 } })).toThrow(/lease_ttl_s/);
  });

  it('is the router\'s own section: not copied into the pools as a worker setting', () => {
    const config = buildConfig({ cluster: { bus: 'nats://nats:4222' }, generation_servers: { urls: ['http://127.0.0.1:9'] } });
    expect((config.generation_servers as Record<string, unknown>).cluster).toBeUndefined();
  });
});
