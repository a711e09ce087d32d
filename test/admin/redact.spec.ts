import { describe, expect, it } from '@jest/globals';
import { hostAllowed } from '../../src/common/allowed-hosts';
import { isSecretKey, redactSecrets } from '../../src/admin/redact';
import { tokenMatches } from '../../src/admin/admin-token';

describe('secret redaction in GET config', () => {
  it.each(['token', 'admin_token', 'apiKey', 'api_key', 'secret', 'client_secret', 'password', 'db-password', 'secret_key_id', 'privateKey'])('treats %s as secret', (key) => {
    expect(isSecretKey(key)).toBe(true);
  });

  it.each(['tokens_per_block', 'use_tokens', 'key_prefix', 'max_tokens', 'hostname', 'keyboard'])('keeps %s', (key) => {
    expect(isSecretKey(key)).toBe(false);
  });

  it('redacts nested values and URL passwords, and leaves the input untouched', () => {
    const input = {
      admin: { token: 'abc', port: 9 },
      custom: [{ api_key: 'k1', name: 'n' }],
      metadata_server_config: { key_prefix: 'trtllm/', hostname: 'https://user:hunter2@etcd:2379' },
      context_servers: { router: { type: 'kv_cache_aware', tokens_per_block: 32 } },
      unset: { token: null },
    };
    expect(redactSecrets(input)).toEqual({
      admin: { token: '***', port: 9 },
      custom: [{ api_key: '***', name: 'n' }],
      metadata_server_config: { key_prefix: 'trtllm/', hostname: 'https://user:***@etcd:2379' },
      context_servers: { router: { type: 'kv_cache_aware', tokens_per_block: 32 } },
      unset: { token: null },
    });
    expect(input.admin.token).toBe('abc');
  });
});

describe('admin.allowed_hosts', () => {
  it('allows anything without a list, else exact hosts and subdomains of wildcards', () => {
    expect(hostAllowed('10.0.0.1', undefined)).toBe(true);
    const list = ['10.0.0.1', 'Worker.Local', '*.pool.internal', '::1'];
    expect(hostAllowed('10.0.0.1', list)).toBe(true);
    expect(hostAllowed('worker.local', list)).toBe(true);
    expect(hostAllowed('a.pool.internal', list)).toBe(true);
    expect(hostAllowed('[::1]', list)).toBe(true);
    expect(hostAllowed('pool.internal', list)).toBe(false);
    expect(hostAllowed('evilpool.internal', list)).toBe(false);
    expect(hostAllowed('10.0.0.10', list)).toBe(false);
    expect(hostAllowed('x', [])).toBe(false);
  });
});

describe('token comparison', () => {
  it('matches only the exact token, whatever the lengths', () => {
    expect(tokenMatches('s3cret-token-value', 's3cret-token-value')).toBe(true);
    expect(tokenMatches('s3cret-token-valu', 's3cret-token-value')).toBe(false);
    expect(tokenMatches('', 's3cret-token-value')).toBe(false);
    expect(tokenMatches('s3cret-token-value-and-more', 's3cret-token-value')).toBe(false);
  });
});
