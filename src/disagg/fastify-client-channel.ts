import type { Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import { ClientGoneError, HttpApiError, REQUEST_ID_HEADER } from '../common';
import type { ApiShape } from '../common/errors/api-shape';
import { writeApiError } from '../common/errors/error-response';
import type { ClientChannel } from './client-channel';
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
    // 'close' comes once: `on` spares the wrapper `once` would make per request.
    this.res.on('close', this.onClose);
    // The client may have left while the request waited for admission.
    if (this.res.destroyed || this.res.socket?.destroyed) this.abort.abort();
    // A channel whose client already left gets no 'close' to unfollow on.
    if (stopSignal && !this.abort.aborted) this.followStop(stopSignal);
  }

  private readonly onClose = (): void => {
    this.stopFollowers?.delete(this);
    if (!this.res.writableFinished) this.abort.abort();
  };

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

  // Head objects written whole: with no header set before, Node takes its fast path.
  sendJson(status: number, body: string, headers?: Readonly<Record<string, string>>): void {
    if (this.res.destroyed) return;
    const head = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), [REQUEST_ID_HEADER]: this.requestId };
    this.res.writeHead(status, headers ? { ...head, ...headers } : head);
    this.res.end(body);
  }

  startStream(moreNow = false): void {
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', [REQUEST_ID_HEADER]: this.requestId });
    // A head flushed alone costs a socket write of its own.
    if (!moreNow) this.res.flushHeaders();
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

/**
 * Ends a request whose flow failed, on the front door's behalf: the router's own shutdown
 * abort answers 503, a client that left gets nothing (its upstream calls are aborted), every
 * other error is written once in the route's API shape.
 */
export function endFailedFlow(err: unknown, channel: FastifyClientChannel, logger: Logger, shape: ApiShape): void {
  const id = channel.requestId;
  if (err instanceof ClientGoneError && channel.stoppedForShutdown) {
    writeApiError(channel.raw, new HttpApiError(503, 'the router is shutting down', { code: 'shutting_down' }), logger, id, shape);
    return;
  }
  if (err instanceof ClientGoneError) {
    logger.log(`[${id}] client disconnected; upstream calls aborted`);
    channel.end();
    return;
  }
  writeApiError(channel.raw, err, logger, id, shape);
}
