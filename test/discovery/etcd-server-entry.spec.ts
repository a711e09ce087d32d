import { describe, expect, it } from '@jest/globals';
import { etcdEntryValue, parseEtcdEntry } from '../../src/discovery';
import { parseRegisterArgs } from '../../src/discovery/register-cli';

describe('parseEtcdEntry', () => {
  it('reads the value trtllm-serve writes (server_role as the enum name)', () => {
    const value = JSON.stringify({ model: 'm', version: '1', timestamp: 'x', server_role: 'CONTEXT', url: 'http://10.0.0.5:8001' });
    expect(parseEtcdEntry('trtllm/abc', value)).toEqual({ ok: true, entry: { key: 'trtllm/abc', url: 'http://10.0.0.5:8001', role: 'context' } });
  });

  it('accepts server_type and a url without scheme', () => {
    expect(parseEtcdEntry('k', JSON.stringify({ server_type: 'generation', url: 'host:9000/' }))).toEqual({
      ok: true,
      entry: { key: 'k', url: 'http://host:9000', role: 'generation' },
    });
  });

  it.each([
    ['not json', /not JSON/],
    ['[1]', /not a JSON object/],
    [JSON.stringify({ server_role: 'GENERATION' }), /no "url"/],
    [JSON.stringify({ server_role: 'MM_ENCODER', url: 'http://h:1' }), /role "MM_ENCODER" is not one this router serves/],
    [JSON.stringify({ url: 'http://h:1' }), /role null/],
    [JSON.stringify({ server_role: 'GENERATION', url: 'http://exa mple:1' }), /not a valid address/],
  ])('rejects %s with a reason', (value, reason) => {
    const parsed = parseEtcdEntry('k', value);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toMatch(reason);
  });

  it('writes values it reads back', () => {
    expect(parseEtcdEntry('k', etcdEntryValue('http://127.0.0.1:8001', 'generation'))).toMatchObject({ ok: true, entry: { role: 'generation' } });
  });
});

describe('register CLI arguments', () => {
  it('parses both --name value and --name=value', () => {
    expect(parseRegisterArgs(['--etcd', '127.0.0.1:2379', '--url=http://127.0.0.1:8001', '--role', 'CONTEXT', '--ttl', '5'])).toEqual({
      mode: 'etcd',
      etcd: '127.0.0.1:2379',
      url: 'http://127.0.0.1:8001',
      role: 'context',
      key: undefined,
      ttl: 5,
    });
  });

  it.each([
    [['--url', 'u', '--role', 'context'], /--etcd or --disagg-cluster is required/],
    [['--etcd', 'e', '--url', 'u', '--role', 'encoder'], /--role must be/],
    [['--etcd', 'e', '--url', 'u', '--role', 'context', '--ttl', '0'], /--ttl/],
    [['--etcd', 'e', '--bogus', 'x'], /unknown argument --bogus/],
    [['--etcd'], /--etcd needs a value/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseRegisterArgs(argv)).toThrow(message);
  });
});
