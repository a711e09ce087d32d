import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { SERVER_ROLES } from '../config';
import { HttpSessionProvider } from '../http-session';
import { RouterRegistry, type RoutingKeyConfig } from '../routing';
import { ClusterStatus, ServerRegistry } from '../servers';
import { packageVersion } from '../version';
import { HttpApiError } from '../common';

/** Router-level endpoints of trtllm-serve disaggregated: health, cluster info, models. */
@Controller()
export class ClusterController {
  private nextModelsServer = 0;

  constructor(
    private readonly status: ClusterStatus,
    private readonly servers: ServerRegistry,
    private readonly session: HttpSessionProvider,
    private readonly routers: RouterRegistry,
  ) {}

  @Get('health')
  health(@Res() reply: FastifyReply): void {
    const readiness = this.status.readiness();
    void reply
      .code(readiness.ready ? 200 : 503)
      .header('content-type', 'application/json')
      .send(JSON.stringify(readiness.ready ? { status: 'ok' } : { status: 'unavailable', reason: readiness.reason }));
  }

  /** As trtllm-serve answers it, with this router's version. */
  @Get('version')
  version(): { version: string } {
    return { version: packageVersion() };
  }

  /**
   * Our fields, plus TensorRT-LLM's `server_lists` (every server of each pool as host:port) and,
   * for KV-aware routers whose servers' hash algorithm is known, `routing_key_configs`.
   */
  @Get('cluster_info')
  clusterInfo(): Record<string, unknown> {
    const info = this.status.clusterInfo();
    const lists: Record<string, string[]> = {};
    const keys: Record<string, RoutingKeyConfig> = {};
    for (const role of SERVER_ROLES) {
      lists[role] = this.servers.list(role).map((s) => new URL(s.url).host);
      const key = this.routers.router(role).routingKeyConfig?.();
      if (key) keys[role] = key;
    }
    info.server_lists = lists;
    if (Object.keys(keys).length > 0) info.routing_key_configs = keys;
    return info;
  }

  /** The model list of a ready generation server, passed through. */
  @Get('v1/models')
  async models(@Res() reply: FastifyReply): Promise<void> {
    const ready = this.servers.ready('generation');
    if (ready.length === 0) throw new HttpApiError(503, 'no generation server available', { code: 'no_server_available' });
    const server = ready[this.nextModelsServer++ % ready.length];
    let res;
    try {
      res = await this.session.request({ origin: server.origin, path: '/v1/models', headersTimeoutMs: 10_000, bodyTimeoutMs: 10_000 });
    } catch (err) {
      throw new HttpApiError(502, `generation server ${server.url} failed: ${(err as Error).message}`, { code: 'upstream_error' });
    }
    const text = await res.body.text();
    void reply.code(res.statusCode).header('content-type', 'application/json').send(text);
  }
}
