import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { APP_CONFIG, type AppConfig } from '../config';
import { bearerTokenOf, tokenMatches } from './admin-token';
import { HttpApiError } from '../common';

const CHALLENGE = { 'www-authenticate': 'Bearer realm="disagg-router admin"' };

/** Lets a request through only with the configured admin bearer token. */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const expected = this.config.admin.token;
    // The module is not mounted without a token; this keeps the API closed if it ever is.
    if (!expected) throw new HttpApiError(404, 'not found');
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const presented = bearerTokenOf(request.headers.authorization);
    if (presented === undefined) {
      throw new HttpApiError(401, 'admin API: an Authorization: Bearer <token> header is required', { code: 'missing_token', headers: CHALLENGE });
    }
    if (!tokenMatches(presented, expected)) {
      throw new HttpApiError(401, 'admin API: invalid token', { code: 'invalid_token', headers: CHALLENGE });
    }
    return true;
  }
}
