import { afterAll, afterEach, beforeAll } from '@jest/globals';
import type { ModuleMetadata } from '@nestjs/common';
import type { DestinationStream } from 'pino';
import type { AppConfigInput } from '../../src/config';
import { startSimCluster, type SimCluster, type SimClusterOptions } from '../../src/simulator';
import { startEtcd, type EtcdServer } from './etcd-server';
import { contextHandler, FakeWorker, generationHandler, type FakeHandler } from './fake-worker';
import { startRouter, type RunningRouter } from './router-app';

/** A scripted worker: its handler, or how to start it (a worker set up beyond its handler). */
export type WorkerSpec = FakeHandler | { start: () => Promise<FakeWorker> };

export interface RouterClusterOptions<W extends string> {
  /** Scripted workers, by name, started in this order before the router. */
  workers?: Record<W, WorkerSpec>;
  /** A simulated cluster started before the router. */
  sim?: SimClusterOptions;
  /** A real etcd process, started first and stopped last. */
  etcd?: boolean;
  /** The router's config; a function builds it from the cluster, whose workers are started. */
  config?: AppConfigInput | ((cluster: RouterCluster<W>) => AppConfigInput);
  /** Extra modules booted with the app (test policies, ...). */
  imports?: ModuleMetadata['imports'];
  /** Runs once the workers are started, before the router starts. */
  beforeRouter?: (cluster: RouterCluster<W>) => Promise<void> | void;
  /** Wait until every configured server that answers is prepared (default true). */
  waitReady?: boolean;
  /** Where the app's pino lines go (read at the config's `logging.level`). */
  logDestination?: DestinationStream;
  /** Checked after every test (leak checks: counters back to zero, ...). */
  afterEach?: (cluster: RouterCluster<W>) => Promise<void> | void;
}

export type RouterCluster<W extends string> = {
  readonly router: RunningRouter;
  /** The router's base URL. */
  readonly url: string;
  readonly sim: SimCluster;
  readonly etcd: EtcdServer;
} & { readonly [name in W]: FakeWorker };

/**
 * Starts etcd, the workers and the real router once for the suite (beforeAll) and closes them
 * (afterAll): router first, then the workers, etcd last. The handle's fields are there from beforeAll on.
 */
export function useRouterCluster<W extends string = never>(options: RouterClusterOptions<W>): RouterCluster<W> {
  const workers = {} as Record<W, FakeWorker>;
  let sim: SimCluster | undefined;
  let etcd: EtcdServer | undefined;
  let router: RunningRouter | undefined;
  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is not started yet: use it inside a test or a hook`);
    return value;
  };
  const handle = {
    get router() {
      return started(router, 'the router');
    },
    get url() {
      return started(router, 'the router').url;
    },
    get sim() {
      return started(sim, 'the simulated cluster');
    },
    get etcd() {
      return started(etcd, 'etcd');
    },
  };
  for (const name of Object.keys(options.workers ?? {}) as W[]) {
    Object.defineProperty(handle, name, { enumerable: true, get: () => started(workers[name], `worker ${name}`) });
  }
  const cluster = handle as RouterCluster<W>;

  beforeAll(async () => {
    if (options.etcd) etcd = await startEtcd();
    for (const [name, spec] of Object.entries(options.workers ?? {}) as Array<[W, WorkerSpec]>) {
      workers[name] = typeof spec === 'function' ? await new FakeWorker(spec).start() : await spec.start();
    }
    if (options.sim) sim = await startSimCluster(options.sim);
    await options.beforeRouter?.(cluster);
    const config = typeof options.config === 'function' ? options.config(cluster) : (options.config ?? {});
    router = await startRouter(config, options.imports, { waitReady: options.waitReady, logDestination: options.logDestination });
  });
  afterAll(async () => {
    await router?.close();
    await Promise.all(Object.values<FakeWorker>(workers).map((w) => w.close()));
    await sim?.close();
    await etcd?.close();
  });
  if (options.afterEach) afterEach(() => options.afterEach!(cluster));
  return cluster;
}

/** The usual config: each named worker's URL as the only server of its pool. */
export function pools(context: FakeWorker | string[] | undefined, generation: FakeWorker | string[], config: AppConfigInput = {}): AppConfigInput {
  const urls = (w: FakeWorker | string[]): string[] => (Array.isArray(w) ? w : [w.url]);
  return {
    ...config,
    ...(context ? { context_servers: { ...config.context_servers, urls: urls(context) } } : {}),
    generation_servers: { ...config.generation_servers, urls: urls(generation) },
  };
}

/**
 * One scripted context worker (`ctx`), one scripted generation worker (`gen`) and the router in
 * front of them, for the suite. `handlers` replaces a worker's default script.
 */
export function useFakeCluster(
  config: AppConfigInput | (() => AppConfigInput) = {},
  options: Omit<RouterClusterOptions<'ctx' | 'gen'>, 'workers' | 'config' | 'sim'> & { ctx?: FakeHandler; gen?: FakeHandler } = {},
): FakeClusterHandle {
  const { ctx, gen, ...rest } = options;
  return useRouterCluster({
    ...rest,
    workers: { ctx: ctx ?? contextHandler(), gen: gen ?? generationHandler() },
    config: (cluster) => pools(cluster.ctx, cluster.gen, typeof config === 'function' ? config() : config),
  });
}

export type FakeClusterHandle = RouterCluster<'ctx' | 'gen'>;
