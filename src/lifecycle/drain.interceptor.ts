import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { finalize, type Observable } from 'rxjs';
import { CLIENT_TRAFFIC } from '../admission/client-traffic.decorator';
import { OpenAiError } from '../openai/openai-error';
import { DrainService } from './drain.service';

/**
 * Counts in-flight client requests for the drain; refuses new ones once shutdown began.
 * Not registered globally: the OpenAI handlers do the same through runClientTraffic.
 */
@Injectable()
export class DrainInterceptor implements NestInterceptor {
  constructor(
    private readonly drain: DrainService,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (!this.reflector.getAllAndOverride<boolean>(CLIENT_TRAFFIC, [context.getHandler(), context.getClass()])) return next.handle();
    if (this.drain.isDraining) {
      throw new OpenAiError(503, 'the router is shutting down', {
        code: 'shutting_down',
        headers: { 'retry-after': '1', connection: 'close' },
      });
    }
    this.drain.enter();
    return next.handle().pipe(finalize(() => this.drain.leave()));
  }
}
