import type { ReplicaBus } from './replica-bus.service';

/** Pause before the first retry of bus work that failed while the bus was up; doubled per failure. */
export const BUS_RETRY_FIRST_MS = 250;
/** The longest pause between retries. */
export const BUS_RETRY_MAX_MS = 5_000;

/**
 * Pacing of bus work that must get done while the bus is up: a resynchronisation, a watch.
 * The bus can stall right after a (re)connection, so such work can fail without the
 * connection dropping, and no later 'up' would redo it (README "Running several replicas",
 * stalls). Pauses double from BUS_RETRY_FIRST_MS to BUS_RETRY_MAX_MS and start over after a
 * success; `cancel()` ends the pause under way. Failures are counted and logged through the bus.
 */
export class BusRetry {
  private failures = 0;
  private timer?: NodeJS.Timeout;
  private wake?: (again: boolean) => void;

  constructor(
    private readonly bus: Pick<ReplicaBus, 'retried' | 'recovered'>,
    private readonly what: string,
  ) {}

  /**
   * Runs `work` until it succeeds: after a failure, again once the pause is over, as long as
   * `goOn()` holds (asked after the failure and after the pause). Never throws.
   */
  async untilDone(work: () => Promise<unknown>, goOn: () => boolean): Promise<void> {
    for (;;) {
      try {
        await work();
        this.succeeded();
        return;
      } catch (err) {
        if (!goOn() || !(await this.failed(err)) || !goOn()) return;
      }
    }
  }

  /** The work succeeded: the next failure pauses BUS_RETRY_FIRST_MS again. */
  succeeded(): void {
    if (!this.failures) return;
    this.bus.recovered(this.what, this.failures);
    this.failures = 0;
  }

  /** Reports the failure and waits its pause: true to try again, false when cancelled meanwhile. */
  failed(err: unknown): Promise<boolean> {
    this.cancel();
    const ms = Math.min(BUS_RETRY_FIRST_MS * 2 ** this.failures, BUS_RETRY_MAX_MS);
    this.bus.retried(this.what, err, this.failures, ms);
    this.failures++;
    return new Promise<boolean>((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.wake = undefined;
        resolve(true);
      }, ms);
    });
  }

  /** Ends the pause under way (its waiter gets false). */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const wake = this.wake;
    this.wake = undefined;
    wake?.(false);
  }
}
