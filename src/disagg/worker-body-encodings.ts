import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, type BodyEncodingSetting } from '../config';
import type { ServerState } from '../servers';
import { JSON_BODY, MSGPACK_BODY, type WorkerBodyEncoder } from './worker-body-encoder';

/**
 * The body encoding of each worker (`http_session.body_encoding`, README "Worker body
 * encoding"). `json` and `msgpack` hold for every worker. `auto` sends msgpack to a worker until
 * it answers that it could not parse the body (an older TensorRT-LLM worker): from then on, for
 * as long as it stays in the registry, it gets JSON, and that is logged once.
 */
@Injectable()
export class WorkerBodyEncodings {
  private readonly logger = new Logger(WorkerBodyEncodings.name);
  private readonly setting: BodyEncodingSetting;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.setting = config.http_session.body_encoding;
  }

  encoderFor(server: ServerState): WorkerBodyEncoder {
    if (this.setting === 'json') return JSON_BODY;
    if (this.setting === 'msgpack') return MSGPACK_BODY;
    return server.msgpackRefused ? JSON_BODY : MSGPACK_BODY;
  }

  /** Whether an answer to a body written so may be a refusal to fall back from (`auto` only). */
  fallsBack(encoder: WorkerBodyEncoder): boolean {
    return this.setting === 'auto' && encoder === MSGPACK_BODY;
  }

  refused(server: ServerState, status: number, answer: string): void {
    if (server.msgpackRefused) return;
    server.msgpackRefused = true;
    const said = answer.replace(/\s+/g, ' ').slice(0, 200);
    this.logger.warn(`${server.role} server ${server.url} cannot parse msgpack bodies (HTTP ${status}: ${said}); it gets JSON from now on (http_session.body_encoding: auto)`);
  }
}
