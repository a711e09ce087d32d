import { CtxRegistry, SimWorker, type SimRole, type SimWorkerOptions } from '../../../src/simulator';

export interface SoakCluster {
  contextUrls: string[];
  generationUrls: string[];
  workers: SimWorker[];
  /** Kills a worker (open streams cut) and resolves once it is gone. */
  kill(role: SimRole, index: number): Promise<void>;
  /** Starts a killed worker again on the same port. */
  restart(role: SimRole, index: number): Promise<void>;
  close(): Promise<void>;
}

/** Simulated context and generation workers failing a share of calls with HTTP 500. */
export async function startSoakCluster(opts: { context: number; generation: number; errorFraction: number; seed: number; decodeMsPerToken: number }): Promise<SoakCluster> {
  const registry = new CtxRegistry();
  const base = (role: SimRole, i: number): SimWorkerOptions => ({
    role,
    registry,
    ctxCheck: 'registry',
    tokenizer: 'bytes',
    latency: { decodeMsPerToken: opts.decodeMsPerToken, prefillMsPerToken: 0, maxBatchSize: 0, overheadMs: 0 },
    faults: opts.errorFraction > 0 ? [{ kind: 'error', status: 500, fraction: opts.errorFraction, seed: opts.seed + i + (role === 'context' ? 0 : 100) }] : [],
  });
  const pools: Record<'context' | 'generation', SimWorker[]> = { context: [], generation: [] };
  const options = new Map<SimWorker, SimWorkerOptions>();
  for (const role of ['context', 'generation'] as const) {
    for (let i = 0; i < opts[role]; i++) {
      const o = base(role, i);
      const w = await SimWorker.start(o);
      pools[role].push(w);
      options.set(w, o);
    }
  }
  const pool = (role: SimRole): SimWorker[] => pools[role as 'context' | 'generation'];
  return {
    contextUrls: pools.context.map((w) => w.url),
    generationUrls: pools.generation.map((w) => w.url),
    get workers() {
      return [...pools.context, ...pools.generation];
    },
    kill: async (role, index) => {
      await pool(role)[index].close();
    },
    restart: async (role, index) => {
      const old = pool(role)[index];
      const w = await SimWorker.start({ ...options.get(old)!, port: old.port });
      options.set(w, options.get(old)!);
      pool(role)[index] = w;
    },
    close: async () => {
      await Promise.all([...pools.context, ...pools.generation].map((w) => w.close()));
    },
  };
}
