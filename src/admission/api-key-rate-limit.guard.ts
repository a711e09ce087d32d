import { CanActivate, ExecutionContext, Inject, Injectable, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { APP_CONFIG, type AppConfig } from '../config';
import { MetricsService } from '../observability/metrics/metrics.service';
import { isClientTraffic } from './client-traffic.decorator';
import { TokenBucket } from './token-bucket';
import { HttpApiError } from '../common';

/**
 * Per-API-key rate limit (limits.api_keys): the client's bearer token (or, from Anthropic's
 * clients, its `x-api-key`) picks a token bucket.
 * Without keys configured the guard returns at its first line.
 */
@Injectable()
export class ApiKeyRateLimitGuard implements CanActivate {
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly rejectUnknown: boolean;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly reflector: Reflector,
    @Optional() private readonly metrics?: MetricsService,
  ) {
    for (const k of config.limits.api_keys) {
      this.buckets.set(k.key, new TokenBucket(k.requests_per_second, k.burst ?? Math.max(1, Math.ceil(k.requests_per_second))));
    }
    this.rejectUnknown = config.limits.reject_unknown_keys;
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.buckets.size === 0) return true;
    if (!isClientTraffic(this.reflector, context)) return true;
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const key = bearerToken(req.headers.authorization) ?? apiKeyHeader(req.headers['x-api-key']);
    const bucket = key === undefined ? undefined : this.buckets.get(key);
    if (!bucket) {
      if (!this.rejectUnknown) return true;
      throw new HttpApiError(401, key === undefined ? 'an API key is required (Authorization: Bearer <key> or x-api-key)' : 'invalid API key', {
        code: 'invalid_api_key',
      });
    }
    const wait = bucket.take();
    if (wait === 0) return true;
    this.metrics?.admissionRejected('rate_limited', 'api_key');
    throw new HttpApiError(429, 'rate limit exceeded for this API key', {
      code: 'rate_limit_exceeded',
      headers: { 'retry-after': String(Math.max(1, Math.ceil(wait))) },
    });
  }
}

/** Anthropic's clients send their key as `x-api-key`. */
function apiKeyHeader(header: string | string[] | undefined): string | undefined {
  const key = Array.isArray(header) ? header[0] : header;
  return key?.trim() || undefined;
}

function bearerToken(header: string | undefined): string | undefined {
  if (!header || !header.startsWith('Bearer ')) return undefined;
  const token = header.slice(7).trim();
  return token || undefined;
}
