import { CtxRegistry } from './ctx-registry';
import { SimWorkerOptions } from './sim-options';
import { SimWorker } from './sim-worker';

export interface SimClusterOptions extends Omit<SimWorkerOptions, 'role' | 'port' | 'registry'> {
  /** Number of context workers, default 1. */
  context?: number;
  /** Number of generation workers, default 1. */
  generation?: number;
  /** Number of mixed (aggregated) workers, default 0. */
  mixed?: number;
  /** First port; consecutive ports follow. Default 0: free ports. */
  basePort?: number;
}

export interface SimCluster {
  contextUrls: string[];
  generationUrls: string[];
  mixedUrls: string[];
  contextWorkers: SimWorker[];
  generationWorkers: SimWorker[];
  mixedWorkers: SimWorker[];
  workers: SimWorker[];
  /** Shared by all workers: context results published, generation requests checked. */
  registry: CtxRegistry;
  close(): Promise<void>;
}

/** Starts simulated workers sharing one context registry (ctxCheck "registry" unless told otherwise). */
export async function startSimCluster(opts: SimClusterOptions = {}): Promise<SimCluster> {
  const { context = 1, generation = 1, mixed = 0, basePort = 0, ...workerOpts } = opts;
  const registry = new CtxRegistry();
  const common: SimWorkerOptions = { preloadTokenizer: true, ctxCheck: 'registry', ...workerOpts, registry };
  const workers: SimWorker[] = [];
  let nextPort = basePort;
  const startMany = async (role: 'context' | 'generation' | 'mixed', n: number): Promise<SimWorker[]> => {
    const out: SimWorker[] = [];
    for (let i = 0; i < n; i++) {
      const w = await SimWorker.start({ ...common, role, port: basePort ? nextPort++ : 0 });
      workers.push(w);
      out.push(w);
    }
    return out;
  };
  try {
    const contextWorkers = await startMany('context', context);
    const generationWorkers = await startMany('generation', generation);
    const mixedWorkers = await startMany('mixed', mixed);
    return {
      contextUrls: contextWorkers.map((w) => w.url),
      generationUrls: generationWorkers.map((w) => w.url),
      mixedUrls: mixedWorkers.map((w) => w.url),
      contextWorkers,
      generationWorkers,
      mixedWorkers,
      workers,
      registry,
      close: async () => {
        await Promise.all(workers.map((w) => w.close()));
      },
    };
  } catch (err) {
    await Promise.all(workers.map((w) => w.close()));
    throw err;
  }
}
