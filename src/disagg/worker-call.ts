import { Inject, Injectable } from '@nestjs/common';
import type { Dispatcher } from 'undici';
import { APP_CONFIG, type AppConfig } from '../config';
import { HttpSessionProvider, type TextParts } from '../http-session';
import type { ServerState } from '../servers';
import { INFERENCE_PATH } from '../common';
import { readAnswerText } from './answer-body';
import type { Flow } from './request-flow';
import { refusesMsgpack, UNPARSED_STATUSES, type WorkerBodyEncoder } from './worker-body-encoder';
import { WorkerBodyEncodings } from './worker-body-encodings';

/** One inference call's answer head, and its text when the call had to read it already. */
export interface CallAnswer {
  res: Dispatcher.ResponseData;
  answerText?: string;
}

/** What one inference call sends: the body in the server's encoding, and the JSON to fall back to. */
export interface CallBody {
  encoder: WorkerBodyEncoder;
  payload: string | Uint8Array | TextParts;
  /** The body as JSON text; its failure is the caller's to handle (see UpstreamDispatch.encode). */
  json: () => string | Uint8Array | TextParts;
  limit: number;
}

/** One inference call to a worker, on the session's pool, in the body encoding of that worker. */
@Injectable()
export class WorkerCall {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly session: HttpSessionProvider,
    private readonly encodings: WorkerBodyEncodings,
  ) {}

  async post(flow: Flow, server: ServerState, headers: Record<string, string>, body: CallBody, timeoutMs: number, stream: boolean): Promise<CallAnswer> {
    const res = await this.request(flow, server, body.encoder.headers(headers), body.payload, timeoutMs, stream);
    if (!UNPARSED_STATUSES.has(res.statusCode) || !this.encodings.fallsBack(body.encoder)) return { res };
    return this.fallBackToJson(flow, server, res, headers, body, timeoutMs, stream);
  }

  /**
   * `body_encoding: auto`, a msgpack body answered 400/415/422: when the answer says the worker
   * could not parse it (an older TensorRT-LLM worker, see docs/protocol.md "Body encoding"), the
   * same server gets the body as JSON at once, within the same attempt (it never read the first
   * one), and JSON from then on. Any other such answer is the worker's verdict on the request,
   * read here and handed on.
   */
  private async fallBackToJson(
    flow: Flow, server: ServerState, res: Dispatcher.ResponseData, headers: Record<string, string>, body: CallBody, timeoutMs: number, stream: boolean,
  ): Promise<CallAnswer> {
    const answerText = await readAnswerText(res, body.limit);
    if (!refusesMsgpack(res.statusCode, answerText)) return { res, answerText };
    this.encodings.refused(server, res.statusCode, answerText);
    return { res: await this.request(flow, server, headers, body.json(), timeoutMs, stream) };
  }

  private request(flow: Flow, server: ServerState, headers: Record<string, string>, body: string | Uint8Array | TextParts, timeoutMs: number, stream: boolean): Promise<Dispatcher.ResponseData> {
    return this.session.request({
      origin: server.origin,
      path: INFERENCE_PATH[flow.kind],
      method: 'POST',
      headers,
      body,
      signal: flow.channel.abort,
      headersTimeoutMs: timeoutMs,
      // A stalled stream must never hang forever: without stream_idle_s, request_s bounds the silence.
      bodyTimeoutMs: stream ? (this.config.timeouts.stream_idle_s ?? this.config.timeouts.request_s) * 1000 : timeoutMs,
    });
  }
}
