import { describe, expect, it } from '@jest/globals';
import { parseCliArgs } from '../../src/simulator/cli';

describe('simulator CLI arguments', () => {
  it('parses the documented flags', () => {
    expect(
      parseCliArgs(['--role', 'context', '--port', '8001', '--count', '2', '--latency', 'demo', '--kv-blocks', '100', '--tokens-per-block', '16']),
    ).toMatchObject({ role: 'context', port: 8001, count: 2, latency: 'demo', kvBlocks: 100, tokensPerBlock: 16, ctxCheck: 'blind' });
    expect(parseCliArgs(['--kv-hash-algo', 'v2_sha256']).kvHashAlgo).toBe('v2_sha256');
    expect(parseCliArgs([]).kvHashAlgo).toBeUndefined();
    expect(parseCliArgs([]).msgpack).toBe(true);
    expect(parseCliArgs(['--no-msgpack']).msgpack).toBe(false);
    expect(parseCliArgs(['--decode-ms-per-token', '5', '--max-batch-size', '8']).latencyOverrides).toEqual({
      decodeMsPerToken: 5,
      maxBatchSize: 8,
    });
  });

  it('refuses unknown flags and bad values', () => {
    expect(() => parseCliArgs(['--role', 'router'])).toThrow(/--role/);
    expect(() => parseCliArgs(['--latency', 'fast'])).toThrow(/--latency/);
    expect(() => parseCliArgs(['--port'])).toThrow(/needs a value/);
    expect(() => parseCliArgs(['--kv-hash-algo', 'md5'])).toThrow(/--kv-hash-algo must be one of v1_block_key, v2_sha256, v2_sha256_64/);
    expect(() => parseCliArgs(['--frobnicate'])).toThrow(/unknown option/);
  });
});
