import { Controller, Inject, Logger, Optional, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ClientTrafficGate } from '../admission/client-traffic-gate';
import { ClientTraffic } from '../admission/client-traffic.decorator';
import { DisaggService } from '../disagg/disagg.service';
import type { RequestKind } from '../routing';
import { requireJsonContentType } from '../common/json-content-type';
import { endFailedFlow, FastifyClientChannel } from '../disagg/fastify-client-channel';
import { validateOpenAiRequest } from './request-validation';
import { ensureRequestChatTemplateAllowed, HttpApiError } from '../common';
import { APP_CONFIG, type AppConfig } from '../config';
import { RequestEvents } from '../request-events';

/** The OpenAI-compatible front door: completions and chat, streamed or not. */
@Controller('v1')
@ClientTraffic()
export class OpenAiController {
  private readonly logger = new Logger('OpenAI');

  /**
   * The traffic gate (admission control and the shutdown drain) is there in the app the
   * router builds; a module graph without it serves every request at once.
   */
  constructor(
    private readonly disagg: DisaggService,
    private readonly events: RequestEvents,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Optional() private readonly traffic?: ClientTrafficGate,
  ) {}

  @Post('completions')
  completions(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.serve('completion', req, reply);
  }

  @Post('chat/completions')
  chatCompletions(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.serve('chat', req, reply);
  }

  private serve(kind: RequestKind, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const admitted = (): Promise<void> => this.serveAdmitted(kind, req, reply);
    return this.traffic ? this.traffic.run(reply, admitted) : admitted();
  }

  private async serveAdmitted(kind: RequestKind, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    let body: Record<string, unknown>;
    try {
      requireJsonContentType(req.headers['content-type']);
      body = validateOpenAiRequest(kind, req.body);
      ensureRequestChatTemplateAllowed(body, this.config.allow_request_chat_template);
    } catch (err) {
      if (err instanceof HttpApiError) this.events.emit('refused', { requestId: req.id, status: err.getStatus() });
      throw err;
    }
    const channel = new FastifyClientChannel(reply, req.id, this.traffic?.stopSignal);
    try {
      await this.disagg.handle(kind, body, channel, req.headers);
    } catch (err) {
      endFailedFlow(err, channel, this.logger, 'openai');
    }
  }
}
