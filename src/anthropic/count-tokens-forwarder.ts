import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { APP_CONFIG, type AppConfig } from '../config';
import { HttpApiError, REQUEST_ID_HEADER } from '../common';
import { anthropicErrorBody } from '../common/errors/api-shape';
import { requireJsonContentType } from '../common/json-content-type';
import { AnswerTooLargeError, classifyTransportError, clientSafeCode, HttpSessionProvider, readBoundedBody } from '../http-session';
import { SideRequestPicker } from '../servers';
import { isObject } from './json';
import { countTokensToChat } from './messages-request';
import { workerErrorMessage } from './worker-message';

/** A token count answer is a few bytes; anything near this is not one. */
const COUNT_ANSWER_LIMIT = 64 * 1024;

/**
 * `POST /v1/messages/count_tokens`, answered by a worker as trtllm-serve disaggregated does:
 * the body (checked as the Messages conversion would take it) goes as it is to the next
 * ready context server (a generation server when aggregated), whose tokenizer and chat
 * template count it; its answer is relayed, its errors in Anthropic's envelope.
 */
@Injectable()
export class CountTokensForwarder {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly workers: SideRequestPicker,
    private readonly session: HttpSessionProvider,
  ) {}

  async forward(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    requireJsonContentType(req.headers['content-type']);
    countTokensToChat(req.body);
    const role = this.workers.role();
    const server = this.workers.pick(role);
    if (!server) throw new HttpApiError(503, `no ${role} server is ready to count tokens`, { code: 'no_server_available', headers: { 'retry-after': '1' } });
    // The client leaving aborts the call.
    const gone = new AbortController();
    const onClose = (): void => {
      if (!reply.raw.writableFinished) gone.abort();
    };
    reply.raw.once('close', onClose);
    const timeoutMs = this.config.timeouts.request_s * 1000;
    let status: number;
    let text: string;
    try {
      const res = await this.session.request({
        origin: server.origin,
        path: '/v1/messages/count_tokens',
        method: 'POST',
        headers: { 'content-type': 'application/json', [REQUEST_ID_HEADER]: req.id },
        body: JSON.stringify(req.body),
        signal: gone.signal,
        headersTimeoutMs: timeoutMs,
        bodyTimeoutMs: timeoutMs,
      });
      status = res.statusCode;
      text = (await readBoundedBody(res.body, res.headers['content-length'], COUNT_ANSWER_LIMIT)).toString('utf8');
    } catch (err) {
      if (gone.signal.aborted) {
        if (!reply.sent) reply.hijack();
        return;
      }
      if (err instanceof AnswerTooLargeError) throw new HttpApiError(502, `${role} server ${server.url} sent an answer that is not a token count`, { code: 'bad_response' });
      const kind = classifyTransportError(err);
      if (kind === 'timeout') throw new HttpApiError(504, `${role} server ${server.url} did not answer within ${timeoutMs / 1000} s`, { code: 'upstream_timeout' });
      throw new HttpApiError(502, `${role} server ${server.url} failed: ${clientSafeCode(err, kind)}`, { code: 'upstream_error' });
    } finally {
      reply.raw.off('close', onClose);
    }
    if (status === 200) {
      if (!isCount(text)) throw new HttpApiError(502, `${role} server ${server.url} sent an answer that is not a token count`, { code: 'bad_response' });
      return send(reply, 200, text);
    }
    const code = status >= 400 && status < 600 ? status : 502;
    send(reply, code, JSON.stringify(anthropicErrorBody(code, workerErrorMessage(status, text))));
  }
}

function isCount(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return isObject(v) && typeof v.input_tokens === 'number';
  } catch {
    return false;
  }
}

function send(reply: FastifyReply, status: number, text: string): void {
  void reply.code(status).header('content-type', 'application/json').send(text);
}
