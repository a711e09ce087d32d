import { Controller, Logger, OnModuleInit, Post, Req, Res } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AdmissionService } from '../admission/admission.service';
import { runClientTraffic } from '../admission/client-traffic-gate';
import { ClientTraffic } from '../admission/client-traffic.decorator';
import { DisaggService } from '../disagg/disagg.service';
import { DrainService } from '../lifecycle/drain.service';
import type { RequestKind } from '../routing';
import { writeOpenAiError } from './error-response';
import { FastifyClientChannel } from './fastify-client-channel';
import { requireJsonContentType, validateOpenAiRequest } from './request-validation';
import { ClientGoneError, HttpApiError } from '../common';

/** The OpenAI-compatible front door: completions and chat, streamed or not. */
@Controller('v1')
@ClientTraffic()
export class OpenAiController implements OnModuleInit {
  private readonly logger = new Logger('OpenAI');
  private stopSignal?: AbortSignal;
  private drain?: DrainService;
  private admission?: AdmissionService;

  constructor(
    private readonly disagg: DisaggService,
    private readonly moduleRef: ModuleRef,
  ) {}

  /**
   * The shutdown drain (when the app has one) counts requests and aborts those still running
   * at its deadline; admission control (when the app has it) limits those in flight.
   */
  onModuleInit(): void {
    try {
      this.drain = this.moduleRef.get(DrainService, { strict: false });
      this.stopSignal = this.drain.stopSignal;
    } catch {
      this.drain = undefined;
      this.stopSignal = undefined;
    }
    try {
      this.admission = this.moduleRef.get(AdmissionService, { strict: false });
    } catch {
      this.admission = undefined;
    }
  }

  @Post('completions')
  completions(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.serve('completion', req, reply);
  }

  @Post('chat/completions')
  chatCompletions(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.serve('chat', req, reply);
  }

  private serve(kind: RequestKind, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    return runClientTraffic(reply, this.drain, this.admission, () => this.serveAdmitted(kind, req, reply));
  }

  private async serveAdmitted(kind: RequestKind, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    requireJsonContentType(req.headers['content-type']);
    const body = validateOpenAiRequest(kind, req.body);
    const channel = new FastifyClientChannel(reply, req.id, this.stopSignal);
    try {
      await this.disagg.handle(kind, body, channel, req.headers);
    } catch (err) {
      if (err instanceof ClientGoneError && channel.stoppedForShutdown) {
        writeOpenAiError(channel.raw, new HttpApiError(503, 'the router is shutting down', { code: 'shutting_down' }), this.logger, req.id);
        return;
      }
      if (err instanceof ClientGoneError) {
        this.logger.log(`[${req.id}] client disconnected; upstream calls aborted`);
        channel.end();
        return;
      }
      writeOpenAiError(channel.raw, err, this.logger, req.id);
    }
  }
}
