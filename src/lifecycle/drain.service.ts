import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { ClientTrafficGate, type ClientTrafficDrain } from '../admission/client-traffic-gate';
import { APP_CONFIG, type AppConfig } from '../config';
import { ClusterStatus, type Readiness } from '../servers';

const READY: Readiness = { ready: true };
const DRAINING: Readiness = { ready: false, reason: 'the router is shutting down' };
/** After the drain deadline, how long aborted requests get to write their final error. */
const ABORT_GRACE_MS = 2_000;

/**
 * Graceful shutdown. Its module is imported by the root module only, so Nest destroys it
 * before every module it depends on (the HTTP session, the routers): on shutdown it turns
 * readiness to 503 for load balancers, refuses new client requests, waits up to
 * shutdown.drain_timeout_s for in-flight ones, then aborts the rest through `stopSignal`.
 */
@Injectable()
export class DrainService implements ClientTrafficDrain, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Shutdown');
  private active = 0;
  private draining = false;
  private readonly stop = new AbortController();
  private onIdle?: () => void;
  private removeGate?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly status: ClusterStatus,
    @Optional() private readonly traffic?: ClientTrafficGate,
  ) {}

  onModuleInit(): void {
    // Client requests count themselves in through the gate (see ClientTrafficGate).
    this.traffic?.useDrain(this);
    this.removeGate = this.status.addGate(() => (this.draining ? DRAINING : READY));
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** In-flight client requests (admitted, not yet finished). */
  get inFlight(): number {
    return this.active;
  }

  /** Aborted when the drain deadline passed: requests still running must end now. */
  get stopSignal(): AbortSignal {
    return this.stop.signal;
  }

  enter(): void {
    this.active++;
  }

  leave(): void {
    this.active--;
    if (this.active === 0) this.onIdle?.();
  }

  async onModuleDestroy(): Promise<void> {
    this.draining = true;
    const timeoutMs = this.config.shutdown.drain_timeout_s * 1000;
    if (this.active > 0) this.logger.log(`draining ${this.active} request(s), up to ${timeoutMs / 1000} s`);
    if (!(await this.idle(timeoutMs))) {
      this.logger.warn(`drain timeout: aborting ${this.active} request(s) still in flight`);
      this.stop.abort();
      if (!(await this.idle(ABORT_GRACE_MS))) this.logger.error(`${this.active} request(s) did not end after being aborted`);
    }
    this.removeGate?.();
  }

  /** Resolves true once nothing is in flight, false after timeoutMs. */
  private idle(timeoutMs: number): Promise<boolean> {
    if (this.active === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.onIdle = undefined;
        resolve(false);
      }, timeoutMs);
      this.onIdle = () => {
        clearTimeout(timer);
        this.onIdle = undefined;
        resolve(true);
      };
    });
  }
}
