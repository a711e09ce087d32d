import type { CircuitInfo, CircuitState } from '../servers';

export interface CircuitBreakerOptions {
  failureThreshold: number;
  cooldownMs: number;
  now?: () => number;
}

/**
 * One server's breaker: consecutive failed requests open it; while open the server stays out
 * of rotation for a cool-down; after that it is half-open and the next health check decides
 * (success closes it, failure opens it for another cool-down).
 */
export class CircuitBreaker {
  private current: CircuitState = 'closed';
  private failures = 0;
  private openUntil = 0;
  private readonly now: () => number;

  constructor(private readonly options: CircuitBreakerOptions) {
    this.now = options.now ?? Date.now;
  }

  get state(): CircuitState {
    if (this.current === 'open' && this.now() >= this.openUntil) this.current = 'half_open';
    return this.current;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }

  /** A failed request; true when this failure opened the breaker. */
  recordFailure(): boolean {
    if (this.state !== 'closed') return false;
    this.failures += 1;
    if (this.failures < this.options.failureThreshold) return false;
    this.open();
    return true;
  }

  /** A request the server answered: the failure streak is over. */
  recordSuccess(): void {
    if (this.state === 'closed') this.failures = 0;
  }

  /**
   * A health check of a server out of rotation. Returns whether the breaker lets it back:
   * always when closed, never while cooling down, and on the half-open probe's success.
   */
  allowsReadmission(healthy: boolean): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'open') return false;
    if (healthy) {
      this.current = 'closed';
      this.failures = 0;
      return true;
    }
    this.open();
    return false;
  }

  snapshot(): CircuitInfo {
    const state = this.state;
    return { state, consecutive_failures: this.failures, ...(state === 'open' ? { open_until: this.openUntil } : {}) };
  }

  private open(): void {
    this.current = 'open';
    this.openUntil = this.now() + this.options.cooldownMs;
  }
}
