import { Controller, Inject, Logger, Optional, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ClientTrafficGate } from '../admission/client-traffic-gate';
import { ClientTraffic } from '../admission/client-traffic.decorator';
import { ensureRequestChatTemplateAllowed, HttpApiError } from '../common';
import { APP_CONFIG, type AppConfig } from '../config';
import { requireJsonContentType } from '../common/json-content-type';
import { DisaggService } from '../disagg/disagg.service';
import { endFailedFlow, FastifyClientChannel } from '../disagg/fastify-client-channel';
import { RequestEvents } from '../request-events';
import { responsesAsChat } from '../tokenizer';
import { validateResponsesRequest } from './responses-validation';
import { StoreWarning } from './store-warning';

/**
 * The OpenAI Responses API front door (`POST /v1/responses`), streamed or not, through the
 * same traffic gate and two-phase flow as chat (see docs/protocol.md "Responses"). The routers
 * see the request as the chat it amounts to.
 */
@Controller('v1')
@ClientTraffic()
export class ResponsesController {
  private readonly logger = new Logger('Responses');
  private readonly storeWarning = new StoreWarning(this.logger);

  constructor(
    private readonly disagg: DisaggService,
    private readonly events: RequestEvents,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Optional() private readonly traffic?: ClientTrafficGate,
  ) {}

  @Post('responses')
  responses(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const admitted = (): Promise<void> => this.serveAdmitted(req, reply);
    return this.traffic ? this.traffic.run(reply, admitted) : admitted();
  }

  private async serveAdmitted(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    let body: Record<string, unknown>;
    try {
      requireJsonContentType(req.headers['content-type']);
      body = validateResponsesRequest(req.body);
      ensureRequestChatTemplateAllowed(body, this.config.allow_request_chat_template);
    } catch (err) {
      if (err instanceof HttpApiError) this.events.emit('refused', { requestId: req.id, status: err.getStatus() });
      throw err;
    }
    if (body.store === true) this.storeWarning.note(req.id);
    const routingView = { kind: 'chat' as const, body: responsesAsChat(body) };
    const channel = new FastifyClientChannel(reply, req.id, this.traffic?.stopSignal);
    try {
      await this.disagg.handle('responses', body, channel, req.headers, routingView);
    } catch (err) {
      endFailedFlow(err, channel, this.logger, 'openai');
    }
  }
}
