import { Controller, Logger, Optional, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ClientTrafficGate } from '../admission/client-traffic-gate';
import { ClientTraffic } from '../admission/client-traffic.decorator';
import { DisaggService } from '../disagg/disagg.service';
import type { RequestKind } from '../routing';
import { requireJsonContentType, validateOpenAiRequest } from './request-validation';
import { checkedRequest, serveOnChannel } from './serve-on-channel';
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
    const body = checkedRequest(this.events, req, () => {
      requireJsonContentType(req.headers['content-type']);
      return validateOpenAiRequest(kind, req.body);
    });
    await serveOnChannel(req, reply, this.logger, this.traffic?.stopSignal, (channel) => this.disagg.handle(kind, body, channel, req.headers));
  }
}
