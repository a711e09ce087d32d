import type { FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { ClientChannel } from '../disagg/client-channel';

/**
 * A hijacked Fastify reply as the disagg flow's client channel. A client that leaves before
 * the answer is complete aborts the signal (res 'close' without writableFinished).
 */
export class FastifyClientChannel implements ClientChannel {
  private readonly controller = new AbortController();
  private readonly res: ServerResponse;

  constructor(
    reply: FastifyReply,
    readonly requestId: string,
  ) {
    reply.hijack();
    this.res = reply.raw;
    this.res.once('close', () => {
      if (!this.res.writableFinished) this.controller.abort();
    });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get headersSent(): boolean {
    return this.res.headersSent;
  }

  get raw(): ServerResponse {
    return this.res;
  }

  sendJson(status: number, body: string, headers: Record<string, string> = {}): void {
    if (this.res.destroyed) return;
    this.res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body), 'x-request-id': this.requestId });
    this.res.end(body);
  }

  startStream(status: number, headers: Record<string, string>): void {
    this.res.writeHead(status, { ...headers, 'x-request-id': this.requestId });
    this.res.flushHeaders();
  }

  write(chunk: Buffer | string): Promise<void> {
    if (this.res.destroyed) return Promise.resolve();
    if (this.res.write(chunk)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.once('drain', done);
      this.res.once('close', done);
    });
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end();
  }
}
