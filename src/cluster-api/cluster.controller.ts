import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { AnswerTooLargeError, classifyTransportError, clientSafeCode, HttpSessionProvider, readBoundedBody } from '../http-session';
import { ClusterStatus, SideRequestPicker } from '../servers';
import { packageVersion } from '../version';

/** Router-level endpoints of trtllm-serve disaggregated: health, cluster info, models. */
@Controller()
export class ClusterController {
  constructor(
    private readonly status: ClusterStatus,
    private readonly sideWorkers: SideRequestPicker,
    private readonly session: HttpSessionProvider,
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

  @Get('cluster_info')
  clusterInfo(): Record<string, unknown> {
    return this.status.clusterInfo();
  }

  /**
   * The model list of a worker, passed through: a ready context server when the cluster has a
   * context pool, else a generation server (round robin, shared with the other side requests),
   * as trtllm-serve disaggregated asks. Its errors use that route's `{"object": "error"}` shape.
   */
  @Get('v1/models')
  async models(@Res() reply: FastifyReply): Promise<void> {
    const role = this.sideWorkers.role();
    const server = this.sideWorkers.pick(role);
    if (!server) return objectError(reply, 503, `no ${role} server is ready to list the models`);
    let status: number;
    let text: Buffer;
    try {
      const res = await this.session.request({ origin: server.origin, path: '/v1/models', headersTimeoutMs: 10_000, bodyTimeoutMs: 10_000 });
      status = res.statusCode;
      text = await readBoundedBody(res.body, res.headers['content-length'], this.session.options.maxControlAnswerBytes);
    } catch (err) {
      const why = err instanceof AnswerTooLargeError ? err.message : clientSafeCode(err, classifyTransportError(err));
      return objectError(reply, 502, `${role} server ${server.url} failed: ${why}`);
    }
    void reply.code(status).header('content-type', 'application/json').send(text);
  }
}

/** The error shape of trtllm-serve disaggregated's /v1/models. */
function objectError(reply: FastifyReply, status: number, message: string): void {
  const body = { object: 'error', message, type: status < 500 ? 'invalid_request_error' : 'api_error', code: status };
  void reply.code(status).header('content-type', 'application/json').send(JSON.stringify(body));
}
