import type { AbortHandle } from '../http-session/abort-handle';

/**
 * The client side of one request as the disagg flow sees it: where the answer goes, and an
 * abort that fires when the client goes away (any phase), so upstream calls are aborted.
 */
export interface ClientChannel {
  readonly abort: AbortHandle;
  /** The request id (x-request-id), forwarded upstream. */
  readonly requestId: string;
  readonly headersSent: boolean;
  /** A whole JSON answer. */
  sendJson(status: number, body: string): void;
  /**
   * Starts a 200 SSE answer. `moreNow` says the first chunk is already at hand: its write
   * then carries the head, which otherwise goes out at once so the client sees it started.
   */
  startStream(moreNow?: boolean): void;
  /**
   * Writes a chunk. Returns nothing when it went out or fits the socket's buffer, and a
   * promise for the drain when it does not: the relay awaits only then.
   */
  write(chunk: Buffer | string): Promise<void> | undefined;
  end(): void;
}
