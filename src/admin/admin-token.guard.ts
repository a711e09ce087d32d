import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ROUTER_CONFIG, type RouterConfig } from '../config';
import { OpenAiError } from '../openai/openai-error';
import { bearerTokenOf, tokenMatches } from './admin-token';

const CHALLENGE = { 'www-authenticate': 'Bearer realm="disagg-router admin"' };

/** Lets a request through only with the configured admin bearer token. */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(@Inject(ROUTER_CONFIG) private readonly config: RouterConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const expected = this.config.admin.token;
    // The module is not mounted without a token; this keeps the API closed if it ever is.
    if (!expected) throw new OpenAiError(404, 'not found');
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const presented = bearerTokenOf(request.headers.authorization);
    if (presented === undefined) {
      throw new OpenAiError(401, 'admin API: an Authorization: Bearer <token> header is required', { code: 'missing_token', headers: CHALLENGE });
    }
    if (!tokenMatches(presented, expected)) {
      throw new OpenAiError(401, 'admin API: invalid token', { code: 'invalid_token', headers: CHALLENGE });
    }
    return true;
  }
}
