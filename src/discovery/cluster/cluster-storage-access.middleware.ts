import { Inject, Injectable, Logger, NestMiddleware } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { APP_CONFIG, type AppConfig } from '../../config';
import { bearerTokenOf, tokenMatches } from '../../common/bearer-token';
import { STORAGE_LIMITS } from './memory-cluster-storage';

/** Largest /set body: a key and a value at their limits, every character escaped twice over. */
export const MAX_SET_BODY_BYTES = 2 * (STORAGE_LIMITS.keyBytes + STORAGE_LIMITS.valueBytes) + 1_024;

/**
 * Runs before the body is read (Nest middleware runs in Fastify's onRequest stage): a request
 * without the storage's key (`disagg_cluster.api_key`, as TensorRT-LLM's storage server checks
 * it: 403 `Invalid API key`) or with a /set body larger than any valid one (413, or 411 when
 * its length is not given) is answered at once, so an anonymous client never makes the router
 * read or hold a large body. Answers use the storage's FastAPI error shape, `{"detail": ...}`.
 */
@Injectable()
export class ClusterStorageAccessMiddleware implements NestMiddleware<IncomingMessage, ServerResponse> {
  private readonly logger = new Logger('ClusterStorage');
  private readonly apiKey: string | undefined;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.apiKey = config.disagg_cluster?.api_key;
  }

  use(req: IncomingMessage, res: ServerResponse, next: () => void): void {
    if (this.apiKey !== undefined) {
      const token = bearerTokenOf(req.headers.authorization);
      if (token === undefined || !tokenMatches(token, this.apiKey)) {
        return this.refuse(req, res, 403, token === undefined ? 'Not authenticated' : 'Invalid API key');
      }
    }
    if (req.method === 'POST') {
      const length = req.headers['content-length'];
      if (length === undefined) return this.refuse(req, res, 411, 'a Content-Length is required');
      if (Number(length) > MAX_SET_BODY_BYTES) return this.refuse(req, res, 413, `the body exceeds ${MAX_SET_BODY_BYTES} bytes`);
    }
    next();
  }

  private refuse(req: IncomingMessage, res: ServerResponse, status: number, detail: string): void {
    this.logger.warn(`${req.method} ${pathOf(req.url)} from ${req.socket.remoteAddress ?? 'unknown'} refused (${status}): ${detail}`);
    // The body is not read: the connection closes after the answer instead of draining it.
    res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
    res.end(JSON.stringify({ detail }));
  }
}

/** The path alone: query strings carry keys, which need not reach the log. */
function pathOf(url: string | undefined): string {
  return (url ?? '').split('?')[0].slice(0, 64);
}
