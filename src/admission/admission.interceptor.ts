import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { catchError, defer, finalize, from, of, switchMap, throwError, type Observable } from 'rxjs';
import { ClientGoneError } from '../disagg/upstream-failure';
import { AdmissionService, type AdmissionTicket } from './admission.service';
import { CLIENT_TRAFFIC } from './client-traffic.decorator';

/**
 * Holds a slot of the global in-flight limit for the whole life of a client request (until
 * its stream ends). A request that has to queue stops waiting when its client leaves.
 * Not registered globally: the OpenAI handlers do the same through runClientTraffic.
 */
@Injectable()
export class AdmissionInterceptor implements NestInterceptor {
  constructor(
    private readonly admission: AdmissionService,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (!this.admission.limited) return next.handle();
    if (!this.reflector.getAllAndOverride<boolean>(CLIENT_TRAFFIC, [context.getHandler(), context.getClass()])) return next.handle();
    const free = this.admission.tryAdmit();
    if (free) return next.handle().pipe(finalize(() => free.release()));
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    let ticket: AdmissionTicket | undefined;
    return defer(() => from(this.queue(reply))).pipe(
      catchError((err: unknown) => {
        if (!(err instanceof ClientGoneError)) return throwError(() => err);
        // Nobody is left to answer.
        if (!reply.sent) reply.hijack();
        return of(undefined);
      }),
      switchMap((t) => {
        if (!t) return of(undefined);
        ticket = t;
        return next.handle();
      }),
      finalize(() => ticket?.release()),
    );
  }

  private async queue(reply: FastifyReply): Promise<AdmissionTicket> {
    const res = reply.raw;
    const gone = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) gone.abort();
    };
    res.once('close', onClose);
    try {
      return await this.admission.admit(gone.signal);
    } finally {
      res.off('close', onClose);
    }
  }
}
