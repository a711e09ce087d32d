import { AbortHandle } from '../http-session/abort-handle';

/**
 * The client side of one request as the disagg flow sees it: where the answer goes, and an
 * abort that fires when the client goes away (any phase), so upstream calls are aborted.
 */
export interface ClientChannel {
  readonly abort: AbortHandle;
  /** The request id (x-request-id), forwarded upstream. */
  readonly requestId: string;
  readonly headersSent: boolean;
  /** A whole JSON answer, with extra headers when given. */
  sendJson(status: number, body: string, headers?: Readonly<Record<string, string>>): void;
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

/**
 * The client channel with an abort of its own that also follows the client's: the generation
 * call waits for a KV cache that a failed context call will never send, so it is aborted then.
 */
export function channelWithOwnAbort(channel: ClientChannel): { channel: ClientChannel; abort: AbortHandle } {
  const abort = new AbortHandle();
  if (channel.abort.aborted) abort.abort(channel.abort.reason);
  else channel.abort.once('abort', () => abort.abort(channel.abort.reason));
  const linked: ClientChannel = {
    abort,
    requestId: channel.requestId,
    get headersSent() {
      return channel.headersSent;
    },
    sendJson: (status, text, headers) => channel.sendJson(status, text, headers),
    startStream: (moreNow) => channel.startStream(moreNow),
    write: (chunk) => channel.write(chunk),
    end: () => channel.end(),
  };
  return { channel: linked, abort };
}
