import { Controller, Logger, Optional, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ClientTrafficGate } from '../admission/client-traffic-gate';
import { ClientTraffic } from '../admission/client-traffic.decorator';
import { ClientGoneError, HttpApiError } from '../common';
import { requireJsonContentType } from '../common/json-content-type';
import { DisaggService } from '../disagg/disagg.service';
import { endFailedFlow, FastifyClientChannel } from '../disagg/fastify-client-channel';
import { AnthropicChannel } from './anthropic-channel';
import { CountTokensForwarder } from './count-tokens-forwarder';
import { messagesToChat } from './messages-request';

const SHUTTING_DOWN = new HttpApiError(503, 'the router is shutting down', { code: 'shutting_down' });

/**
 * The Anthropic Messages API front door (README "Anthropic Messages API"): a message request
 * is served as the chat request it converts to, through the same two-phase flow (every
 * routing policy, the tokenizer, KV-aware scoring), and answered in the Messages API's shape;
 * token counting is a context worker's. Client credentials (`x-api-key`, `anthropic-version`)
 * never reach a worker: the flow builds its upstream headers itself.
 */
@Controller('v1/messages')
@ClientTraffic()
export class AnthropicController {
  private readonly logger = new Logger('Anthropic');

  constructor(
    private readonly disagg: DisaggService,
    private readonly counter: CountTokensForwarder,
    @Optional() private readonly traffic?: ClientTrafficGate,
  ) {}

  @Post()
  messages(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.gated(reply, () => this.serveMessages(req, reply));
  }

  @Post('count_tokens')
  countTokens(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.gated(reply, () => this.counter.forward(req, reply));
  }

  /** Admission control and the shutdown drain, as for the OpenAI routes. */
  private gated(reply: FastifyReply, handler: () => Promise<void>): Promise<void> {
    return this.traffic ? this.traffic.run(reply, handler) : handler();
  }

  private async serveMessages(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    requireJsonContentType(req.headers['content-type']);
    const chat = messagesToChat(req.body);
    const inner = new FastifyClientChannel(reply, req.id, this.traffic?.stopSignal);
    const channel = new AnthropicChannel(inner, chat.model, this.logger);
    try {
      await this.disagg.handle('chat', chat.body, channel, req.headers);
    } catch (err) {
      const gone = err instanceof ClientGoneError && !inner.stoppedForShutdown;
      const error = err instanceof ClientGoneError ? SHUTTING_DOWN : err instanceof HttpApiError ? err : undefined;
      if (!gone && error && channel.failStream(error, this.logger)) return;
      endFailedFlow(err, inner, this.logger, 'anthropic');
    }
  }
}
