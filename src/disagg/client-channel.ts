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
  sendJson(status: number, body: string, headers?: Record<string, string>): void;
  startStream(status: number, headers: Record<string, string>): void;
  /** Resolves when the chunk is flushed or buffered within the socket's high-water mark. */
  write(chunk: Buffer | string): Promise<void>;
  end(): void;
}
