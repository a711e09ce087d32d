import { describe, expect, it } from '@jest/globals';
import { createRouterApp } from '../../src/app.factory';
import { buildConfig, type AppConfigInput } from '../../src/config';
import { KvCacheAwareRouter, RouterRegistry } from '../../src/routing';

async function initError(config: AppConfigInput): Promise<Error> {
  const app = await createRouterApp(buildConfig({ logging: { level: 'error' }, ...config }), { logger: false });
  try {
    await app.init();
  } catch (err) {
    return err as Error;
  } finally {
    await app.close().catch(() => undefined);
  }
  throw new Error('the app started');
}

const pool = (router: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ urls: ['127.0.0.1:9'], router, ...extra });

describe('policy selection from config', () => {
  it('refuses to start on an unknown policy name, listing the available ones', async () => {
    const err = await initError({ generation_servers: pool({ type: 'fastest' }) });
    expect(err.message).toContain("unknown routing policy 'fastest'");
    expect(err.message).toContain('generation_servers.router.type');
    expect(err.message).toMatch(/available: centralized_kv_cache_aware, conversation, kv_cache_aware, load_balancing, round_robin/);
  });

  it('validates argument values with the policy schema and names the key (unknown keys are only warned about)', async () => {
    const zero = await initError({ generation_servers: pool({ type: 'kv_cache_aware', tokens_per_block: 0 }) });
    expect(zero.message).toContain("invalid arguments for routing policy 'kv_cache_aware'");
    expect(zero.message).toContain('generation_servers.router.tokens_per_block');
    const bad = await initError({ context_servers: pool({ type: 'conversation', match_threshold: 2 }), generation_servers: pool({ type: 'round_robin' }) });
    expect(bad.message).toContain('context_servers.router.match_threshold');
    const tokenizer = await initError({ generation_servers: pool({ type: 'load_balancing', use_tokens: true, tokenizer: 'gpt2' }) });
    expect(tokenizer.message).toContain('generation_servers.router.tokenizer');
  });

  it('gives each pool its own instance, with pool-level max_batch_size and tokens_per_block applied', async () => {
    const app = await createRouterApp(
      buildConfig({
        logging: { level: 'error' },
        context_servers: pool({ type: 'kv_cache_aware', tokenizer: 'bytes' }),
        generation_servers: pool({ type: 'kv_cache_aware', tokenizer: 'bytes', use_tokens: true }, { max_batch_size: 8, kv_cache_config: { tokens_per_block: 16 } }),
        health: { startup_wait_s: 0 },
      }),
      { logger: false },
    );
    try {
      await app.init();
      const manager = app.get(RouterRegistry);
      const ctx = manager.router('context');
      const gen = manager.router('generation');
      expect(ctx).toBeInstanceOf(KvCacheAwareRouter);
      expect(gen).toBeInstanceOf(KvCacheAwareRouter);
      expect(ctx).not.toBe(gen);
      expect(ctx.args).toMatchObject({ max_batch_size: 64, use_tokens: false });
      // Left out: taken from the workers' /server_info once one announces it, else 32.
      expect(ctx.args.tokens_per_block).toBeUndefined();
      expect((ctx as KvCacheAwareRouter).tokensPerBlock).toBe(32);
      expect(gen.args).toMatchObject({ max_batch_size: 8, tokens_per_block: 16, use_tokens: true });
      expect((gen as KvCacheAwareRouter).tokensPerBlock).toBe(16);
    } finally {
      await app.close();
    }
  });
});
