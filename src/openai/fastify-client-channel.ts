import type { FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { ClientChannel } from '../disagg/client-channel';
import { AbortHandle } from '../http-session/abort-handle';

/** The live channels following each shutdown stop signal. */
const STOP_FOLLOWERS = new WeakMap<AbortSignal, Set<FastifyClientChannel>>();

/**
 * A hijacked Fastify reply as the disagg flow's client channel. A client that leaves before
 * the answer is complete aborts the request (res 'close' without writableFinished).
 */
export class FastifyClientChannel implements ClientChannel {
  readonly abort = new AbortHandle();
  private readonly res: ServerResponse;

  constructor(
    reply: FastifyReply,
    readonly requestId: string,
    stopSignal?: AbortSignal,
  ) {
    reply.hijack();
    this.res = reply.raw;
    this.res.once('close', () => {
      this.stopFollowers?.delete(this);
      if (!this.res.writableFinished) this.abort.abort();
    });
    // The client may have left while the request waited for admission.
    if (this.res.destroyed || this.res.socket?.destroyed) this.abort.abort();
    // A channel whose client already left gets no 'close' to unfollow on.
    if (stopSignal && !this.abort.aborted) this.followStop(stopSignal);
  }

  /** True when the router itself aborted the request (shutdown drain deadline), not the client. */
  stoppedForShutdown = false;
  private stopFollowers?: Set<FastifyClientChannel>;

  private followStop(stop: AbortSignal): void {
    if (stop.aborted) return this.stopForShutdown();
    // One listener per stop signal for all live channels: adding and removing an EventTarget
    // listener on every request costs more than a Set entry.
    let set = STOP_FOLLOWERS.get(stop);
    if (!set) {
      const channels = new Set<FastifyClientChannel>();
      stop.addEventListener('abort', () => {
        for (const c of channels) c.stopForShutdown();
        channels.clear();
      }, { once: true });
      STOP_FOLLOWERS.set(stop, channels);
      set = channels;
    }
    set.add(this);
    this.stopFollowers = set;
  }

  private stopForShutdown(): void {
    this.stoppedForShutdown = true;
    this.abort.abort();
  }

  get headersSent(): boolean {
    return this.res.headersSent;
  }

  get raw(): ServerResponse {
    return this.res;
  }

  sendJson(status: number, body: string, headers?: Record<string, string>): void {
    const res = this.res;
    if (res.destroyed) return;
    if (headers) for (const name in headers) res.setHeader(name, headers[name]);
    res.setHeader('content-length', Buffer.byteLength(body));
    res.setHeader('x-request-id', this.requestId);
    res.writeHead(status);
    res.end(body);
  }

  startStream(status: number, headers: Record<string, string>, moreNow = false): void {
    const res = this.res;
    for (const name in headers) res.setHeader(name, headers[name]);
    res.setHeader('x-request-id', this.requestId);
    res.writeHead(status);
    // A head flushed alone costs a socket write of its own.
    if (!moreNow) res.flushHeaders();
  }

  write(chunk: Buffer | string): Promise<void> | undefined {
    if (this.res.destroyed || this.res.write(chunk)) return undefined;
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
