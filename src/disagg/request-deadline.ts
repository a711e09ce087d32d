import type { AbortHandle } from '../http-session/abort-handle';

export type DeadlineKind = 'request' | 'first_event';

/**
 * The whole-call deadline of one client request (timeouts.request_s), and for a stream the
 * deadline of its first event: when one passes, the request's abort fires (upstream calls end
 * at once) and `expired` says which, so the flow answers 504 instead of treating the abort as
 * the client leaving.
 */
export class RequestDeadline {
  expired: DeadlineKind | undefined = undefined;
  private readonly timer: NodeJS.Timeout;
  private firstEventTimer: NodeJS.Timeout | undefined = undefined;

  constructor(private readonly abort: AbortHandle, readonly requestMs: number) {
    // Static callbacks with the deadline as argument: no closure per request.
    this.timer = setTimeout(expire, requestMs, this, 'request');
  }

  /** Arms the first-event deadline of a streamed answer (cleared by firstEvent()). */
  armFirstEvent(ms: number): void {
    this.firstEventTimer = setTimeout(expire, ms, this, 'first_event');
  }

  firstEvent(): void {
    if (this.firstEventTimer === undefined) return;
    clearTimeout(this.firstEventTimer);
    this.firstEventTimer = undefined;
  }

  get waitingForFirstEvent(): boolean {
    return this.firstEventTimer !== undefined;
  }

  clear(): void {
    clearTimeout(this.timer);
    if (this.firstEventTimer !== undefined) clearTimeout(this.firstEventTimer);
  }

  /** @internal */
  fire(kind: DeadlineKind): void {
    if (this.abort.aborted) return;
    this.expired = kind;
    this.abort.abort();
  }
}

function expire(deadline: RequestDeadline, kind: DeadlineKind): void {
  deadline.fire(kind);
}
