import type { AbortHandle } from '../http-session/abort-handle';

/** First wait before trying a server again; doubled per further try, capped. */
export const SAME_SERVER_BACKOFF_MS = 100;
export const SAME_SERVER_BACKOFF_CAP_MS = 2_000;

/**
 * Retries on the server that just failed, for a pool with no other server left (the common
 * layout of one server per pool): instead of answering 502 at once, the failed server is let
 * back into the pick after a doubling backoff, as TensorRT-LLM retries its one server after a
 * short wait. The caller bounds the tries by max_retries; nothing has reached the client yet.
 */
export class SameServerRetry {
  private tries = 0;

  /**
   * Lets `failedUrl` be picked again and waits the backoff. False when there is nothing to
   * retry (the server was not excluded) or the client left during the wait.
   */
  async readmit(excluded: string[], failedUrl: string | undefined, abort: AbortHandle): Promise<boolean> {
    const at = failedUrl === undefined ? -1 : excluded.lastIndexOf(failedUrl);
    if (at < 0) return false;
    excluded.splice(at, 1);
    const waitMs = Math.min(SAME_SERVER_BACKOFF_MS * 2 ** this.tries, SAME_SERVER_BACKOFF_CAP_MS);
    this.tries += 1;
    await waitUnlessAborted(waitMs, abort);
    return !abort.aborted;
  }
}

function waitUnlessAborted(ms: number, abort: AbortHandle): Promise<void> {
  if (abort.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      abort.removeListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    abort.once('abort', done);
  });
}
