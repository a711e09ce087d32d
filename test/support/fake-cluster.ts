import type { ModuleMetadata } from '@nestjs/common';
import type { AppConfigInput } from '../../src/config';
import { contextHandler, FakeWorker, generationHandler, type FakeHandler } from './fake-worker';
import { startRouter, type RunningRouter } from './router-app';

export interface FakeCluster {
  ctx: FakeWorker;
  gen: FakeWorker;
  router: RunningRouter;
  close(): Promise<void>;
}

/**
 * One scripted context worker, one scripted generation worker and the real router in front
 * of them. `config` is merged in; its pool blocks keep their own keys (router, ...).
 * `handlers` replaces a worker's default script.
 */
export async function startFakeCluster(
  config: AppConfigInput = {},
  imports?: ModuleMetadata['imports'],
  handlers: { ctx?: FakeHandler; gen?: FakeHandler } = {},
): Promise<FakeCluster> {
  const ctx = await new FakeWorker(handlers.ctx ?? contextHandler()).start();
  const gen = await new FakeWorker(handlers.gen ?? generationHandler()).start();
  const router = await startRouter(
    {
      ...config,
      context_servers: { ...config.context_servers, urls: [ctx.url] },
      generation_servers: { ...config.generation_servers, urls: [gen.url] },
    },
    imports,
  );
  return {
    ctx,
    gen,
    router,
    close: async () => {
      await router.close();
      await ctx.close();
      await gen.close();
    },
  };
}
