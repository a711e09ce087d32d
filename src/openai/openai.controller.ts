import { Controller, Logger, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DisaggService } from '../disagg/disagg.service';
import { ClientGoneError } from '../disagg/upstream-failure';
import type { RequestKind } from '../routing';
import { writeOpenAiError } from './error-response';
import { FastifyClientChannel } from './fastify-client-channel';
import { validateOpenAiRequest } from './request-validation';

/** The OpenAI-compatible front door: completions and chat, streamed or not. */
@Controller('v1')
export class OpenAiController {
  private readonly logger = new Logger('OpenAI');

  constructor(private readonly disagg: DisaggService) {}

  @Post('completions')
  completions(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.serve('completion', req, reply);
  }

  @Post('chat/completions')
  chatCompletions(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.serve('chat', req, reply);
  }

  private async serve(kind: RequestKind, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const body = validateOpenAiRequest(kind, req.body);
    const channel = new FastifyClientChannel(reply, req.id);
    try {
      await this.disagg.handle(kind, body, channel);
    } catch (err) {
      if (err instanceof ClientGoneError) {
        this.logger.log(`[${req.id}] client disconnected; upstream calls aborted`);
        channel.end();
        return;
      }
      writeOpenAiError(channel.raw, err, this.logger, req.id);
    }
  }
}
