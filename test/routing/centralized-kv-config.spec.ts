import { describe, expect, it } from '@jest/globals';
import { Pull } from 'zeromq';
import { createRouterApp } from '../../src/app.factory';
import { buildConfig } from '../../src/config';
import { RouterRegistry } from '../../src/routing';
import { LogCapture } from '../observability/log-capture';
import { unusedPort } from '../support/free-port';
import { waitFor } from '../support/router-app';

const gen = { urls: ['127.0.0.1:1'] };
const central = { type: 'Centralized_KV_Cache_Aware', router_port: 0, router_host: '127.0.0.1' };

describe('centralized_kv_cache_aware configuration', () => {
  it('takes TensorRT-LLM arguments, warns about unknown ones by name and binds its endpoint', async () => {
    const logs = new LogCapture();
    const app = await createRouterApp(
      buildConfig({ logging: { level: 'warn' }, generation_servers: { ...gen, kv_cache_config: { tokens_per_block: 16 }, router: { ...central, use_tokens: true, rank_routing_algo: 'adp', fair_share_multiplier: 3 } } }),
      { logDestination: logs },
    );
    await app.init();
    try {
      expect(logs.lines.map((l) => String(l.msg))).toContain("generation_servers.router.use_tokens: not an argument of routing policy 'centralized_kv_cache_aware'; ignored");
      const snap = app.get(RouterRegistry).router('generation').snapshot();
      expect(snap).toMatchObject({
        policy: 'centralized_kv_cache_aware',
        args: { tokens_per_block: 16, rank_routing_algo: 'adp', fair_share_multiplier: 3, load_weight: 0.25, match_rate_threshold: 0.1, load_suspend_s: 100, stale_timeout_s: 30 },
        namespace: 'gen',
        signed_reports: false,
      });
      expect(snap.router_endpoint).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await app.close();
    }
  });

  it('refuses to start on a bad argument, naming it', async () => {
    const config = buildConfig({ generation_servers: { ...gen, router: { ...central, rank_routing_algo: 'random' } } });
    await expect(createRouterApp(config, { logger: false }).then((app) => app.init())).rejects.toThrow(/generation_servers\.router\.rank_routing_algo/);
  });

  it('refuses to start when its port is taken or the HMAC key is not base64, and leaves nothing bound', async () => {
    const port = await unusedPort();
    const ctxPort = await unusedPort();
    /** Unbinding before close: close() alone lets go of the port later, from ZMQ's I/O thread. */
    const release = async (socket: Pull, at: number): Promise<void> => {
      await socket.unbind(`tcp://127.0.0.1:${at}`);
      socket.close();
    };
    /**
     * The port takes a new endpoint within 5 s: nothing holds it. ZMQ lets go of a port from its
     * I/O thread even after unbind (about 1 bind in 300 right after fails here), so this polls.
     */
    const bindsAgain = async (at: number): Promise<void> => {
      let bound: Pull | undefined;
      await waitFor(async () => {
        const socket = new Pull();
        try {
          await socket.bind(`tcp://127.0.0.1:${at}`);
          bound = socket;
          return true;
        } catch {
          socket.close();
          return false;
        }
      }, 5_000, `port ${at} free`);
      await release(bound!, at);
    };
    const holder = new Pull();
    await holder.bind(`tcp://127.0.0.1:${port}`);
    try {
      // The context pool binds its port, the generation pool's is taken: the start fails and the context pool lets go.
      const taken = buildConfig({ context_servers: { urls: ['127.0.0.1:2'], router: { ...central, router_port: ctxPort } }, generation_servers: { ...gen, router: { ...central, router_port: port } } });
      await expect(createRouterApp(taken, { logger: false }).then((app) => app.init())).rejects.toThrow(/routing policy 'centralized_kv_cache_aware' could not start/);
    } finally {
      await release(holder, port);
    }
    await bindsAgain(ctxPort);
    const saved = process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY;
    process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY = 'not base64!';
    try {
      const config = buildConfig({ generation_servers: { ...gen, router: { ...central, router_port: port } } });
      await expect(createRouterApp(config, { logger: false }).then((app) => app.init())).rejects.toThrow(/TLLM_CENTRALIZED_ROUTER_HMAC_KEY is not valid base64/);
    } finally {
      if (saved === undefined) delete process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY;
      else process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY = saved;
    }
    // Nothing was left bound.
    await bindsAgain(port);
  });
});
