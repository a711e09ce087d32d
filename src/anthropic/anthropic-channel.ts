import type { Logger } from '@nestjs/common';
import { StringDecoder } from 'node:string_decoder';
import type { HttpApiError } from '../common';
import { anthropicErrorBody, anthropicErrorType, type AnthropicErrorType } from '../common/errors/api-shape';
import type { ClientChannel } from '../disagg/client-channel';
import { isObject, type Json } from './json';
import { chatToMessage, UnconvertibleAnswerError } from './messages-response';
import { MessagesStreamReframer } from './messages-stream';
import { workerErrorMessage } from './worker-message';

/**
 * The client channel of a Messages API request: the disagg flow writes a chat answer into it
 * (whole, or as chat SSE) and the client gets the Messages API's answer, so the flow itself
 * serves it as the chat request it is. Errors the flow answers with (a worker's 4xx, a
 * router error event mid-stream) leave in Anthropic's envelope.
 */
export class AnthropicChannel implements ClientChannel {
  private reframer: MessagesStreamReframer | undefined;
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  /** The stream said [DONE] or ended with an error event: nothing more is written. */
  private closed = false;

  constructor(
    private readonly inner: ClientChannel,
    private readonly model: string,
    private readonly logger: Logger,
  ) {}

  get abort(): ClientChannel['abort'] {
    return this.inner.abort;
  }

  get requestId(): string {
    return this.inner.requestId;
  }

  get headersSent(): boolean {
    return this.inner.headersSent;
  }

  sendJson(status: number, body: string): void {
    if (status !== 200) {
      this.inner.sendJson(status, JSON.stringify(anthropicErrorBody(status, workerErrorMessage(status, body))));
      return;
    }
    let message: Json;
    try {
      const chat: unknown = JSON.parse(body);
      if (!isObject(chat)) throw new UnconvertibleAnswerError('the answer is not a JSON object');
      message = chatToMessage(chat, this.model);
    } catch (err) {
      const why = err instanceof UnconvertibleAnswerError ? err.message : 'the answer is not JSON';
      this.logger.warn(`[${this.requestId}] 502 the chat answer could not be converted: ${why}`);
      this.inner.sendJson(502, JSON.stringify(anthropicErrorBody(502, `the generation server's answer could not be converted: ${why}`)));
      return;
    }
    this.inner.sendJson(200, JSON.stringify(message));
  }

  startStream(moreNow?: boolean): void {
    this.reframer = new MessagesStreamReframer(this.model);
    this.inner.startStream(moreNow);
  }

  write(chunk: Buffer | string): Promise<void> | undefined {
    if (this.closed) return undefined;
    const text = this.pending + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
    let out = '';
    let from = 0;
    let nl: number;
    while (!this.closed && (nl = text.indexOf('\n', from)) >= 0) {
      const end = nl > from && text.charCodeAt(nl - 1) === 0x0d ? nl - 1 : nl;
      out += this.line(text.slice(from, end));
      from = nl + 1;
    }
    this.pending = this.closed ? '' : text.slice(from);
    return out ? this.inner.write(out) : undefined;
  }

  /**
   * A flow failure after the stream started (a deadline, the shutdown drain): the open block
   * is closed and the error event sent in the stream's own sequence. False when no stream is
   * open to end that way (the error is then answered as JSON).
   */
  failStream(error: HttpApiError, logger: Logger): boolean {
    if (!this.reframer || this.closed || !this.inner.headersSent) return false;
    logger.warn(`[${this.requestId}] ${error.getStatus()} ${error.body.error.message}`);
    void this.inner.write(this.fail(anthropicErrorType(error.getStatus()), error.body.error.message))?.catch(() => undefined);
    this.inner.end();
    return true;
  }

  end(): void {
    if (this.reframer && !this.closed && !this.abort.aborted) {
      // A chat stream that ends without [DONE] was cut short: never a finished message.
      const rest = this.pending.trim() ? this.line(this.pending.trim()) : '';
      const out = rest + (this.closed ? '' : this.fail('api_error', 'the stream ended before the answer was complete'));
      void this.inner.write(out)?.catch(() => undefined);
    }
    this.inner.end();
  }

  /** The Anthropic events one chat SSE line makes. */
  private line(line: string): string {
    if (!line.startsWith('data:')) return '';
    const data = line.slice(5).trim();
    if (!data) return '';
    const reframer = this.reframer!;
    if (data === '[DONE]') {
      this.closed = true;
      return reframer.finish();
    }
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      return this.fail('api_error', 'the generation server sent a malformed stream event');
    }
    if (!isObject(json)) return this.fail('api_error', 'the generation server sent a malformed stream event');
    // The router's own error event (OpenAI shape) or a worker's ({"object": "error", ...}).
    if (isObject(json.error) || json.object === 'error') return this.fail(streamErrorType(json), workerErrorMessage(500, data));
    return reframer.chunk(json);
  }

  private fail(type: AnthropicErrorType, message: string): string {
    this.closed = true;
    return this.reframer!.error(type, message);
  }
}

/** A router timeout keeps its meaning; every other break of a stream is an api_error. */
function streamErrorType(json: Json): AnthropicErrorType {
  const error = isObject(json.error) ? json.error : json;
  return error.type === 'timeout_error' || error.code === 'upstream_timeout' ? 'timeout_error' : 'api_error';
}
