import { beforeAll } from '@jest/globals';
import OpenAI from 'openai';
import { useRouterCluster, type RouterCluster } from './router-cluster';

export interface SimulatedOpenAi {
  readonly cluster: RouterCluster<never>;
  /** The official openai client, pointed at the router (from beforeAll on). */
  readonly client: OpenAI;
}

/** The router in front of one simulated context and one generation worker, and the official openai client for it. */
export function useSimulatedOpenAi(): SimulatedOpenAi {
  const cluster = useRouterCluster({
    sim: { context: 1, generation: 1, tokenizer: 'bytes' },
    config: (c) => ({ context_servers: { urls: c.sim.contextUrls }, generation_servers: { urls: c.sim.generationUrls } }),
  });
  let client: OpenAI | undefined;
  beforeAll(() => {
    client = new OpenAI({ baseURL: `${cluster.router.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  return {
    cluster,
    get client(): OpenAI {
      if (!client) throw new Error('the client is not set up yet: use it inside a test or a hook');
      return client;
    },
  };
}
