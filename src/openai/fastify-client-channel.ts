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
    stopSignal?: AbortSignal,
  ) {
    reply.hijack();
    this.res = reply.raw;
    this.res.once('close', () => {
      if (!this.res.writableFinished) this.controller.abort();
    });
    // The client may have left while the request waited for admission.
    if (this.res.destroyed || this.res.socket?.destroyed) this.controller.abort();
    if (stopSignal) this.followStop(stopSignal);
  }

  /** True when the router itself aborted the request (shutdown drain deadline), not the client. */
  stoppedForShutdown = false;

  private followStop(stop: AbortSignal): void {
    const onStop = (): void => {
      this.stoppedForShutdown = true;
      this.controller.abort();
    };
    if (stop.aborted) return onStop();
    stop.addEventListener('abort', onStop, { once: true });
    this.res.once('close', () => stop.removeEventListener('abort', onStop));
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
