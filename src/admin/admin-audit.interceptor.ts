import { CallHandler, ExecutionContext, Inject, Injectable, Logger, NestInterceptor } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { tap, type Observable } from 'rxjs';
import { APP_CONFIG, type AppConfig } from '../config';
import { tokenFingerprint } from './admin-token';

const READ_ONLY = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * One audit line per successful mutating admin call: who (client address and token
 * fingerprint) and what (method, path, body). Failures are logged by the
 * exception filter, once.
 */
@Injectable()
export class AdminAuditInterceptor implements NestInterceptor {
  private readonly logger = new Logger('AdminAudit');
  private readonly who: string;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.who = config.admin.token ? `token:${tokenFingerprint(config.admin.token)}` : 'admin';
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    if (READ_ONLY.has(request.method)) return next.handle();
    return next.handle().pipe(
      tap(() => {
        const body = request.body === undefined || request.body === null ? '' : ` ${summarize(request.body)}`;
        this.logger.log(`${request.ip} ${this.who}: ${request.method} ${request.url}${body} done`);
      }),
    );
  }
}

function summarize(body: unknown): string {
  const text = JSON.stringify(body);
  return text.length > 300 ? `${text.slice(0, 300)}...` : text;
}
