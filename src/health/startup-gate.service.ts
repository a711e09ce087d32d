import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, trtllmEnv, type AppConfig } from '../config';
import { ClusterStatus, ServerRegistry, type Readiness } from '../servers';

/**
 * The startup wait: /health says 503 until every server known at startup has been prepared
 * (or `health.startup_wait_s` has passed), without holding up app.listen(). Discovery sources
 * that load servers asynchronously (etcd) hold the gate until their first load is done.
 */
@Injectable()
export class StartupGate implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(StartupGate.name);
  private readonly holds = new Set<string>();
  private readonly waitMs: number;
  private deadline = 0;
  private open = false;
  private timer?: NodeJS.Timeout;
  private readonly cleanup: Array<() => void> = [];
  /** TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1: only the generation pool is waited for, as in TensorRT-LLM. */
  private readonly role = trtllmEnv().benchmarkGenOnly ? ('generation' as const) : undefined;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly registry: ServerRegistry,
    private readonly status: ClusterStatus,
  ) {
    this.waitMs = config.health.startup_wait_s * 1000;
  }

  onModuleInit(): void {
    this.deadline = Date.now() + this.waitMs;
    this.open = this.waitMs === 0;
    if (this.open) return;
    this.cleanup.push(
      this.status.addGate(() => this.readiness()),
      this.registry.onEvent(() => this.evaluate()),
    );
    this.timer = setTimeout(() => this.evaluate(), this.waitMs);
  }

  onModuleDestroy(): void {
    clearTimeout(this.timer);
    for (const off of this.cleanup.splice(0)) off();
  }

  /** Keeps the gate closed until the returned release is called (or the wait is over). */
  hold(name: string): () => void {
    if (this.open) return () => undefined;
    this.holds.add(name);
    return () => {
      this.holds.delete(name);
      this.evaluate();
    };
  }

  /** True while the startup wait is still running. */
  get waiting(): boolean {
    this.evaluate();
    return !this.open;
  }

  /** Seconds left of the wait (0 once it is over). */
  get secondsLeft(): number {
    return this.open ? 0 : Math.max(0, Math.ceil((this.deadline - Date.now()) / 1000));
  }

  readiness(): Readiness {
    if (!this.waiting) return { ready: true };
    const all = this.registry.list(this.role);
    const ready = all.filter((s) => s.status === 'ready').length;
    const pending = this.holds.size ? `, waiting for ${[...this.holds].join(', ')}` : '';
    return {
      ready: false,
      reason: `starting: ${ready} of ${all.length} servers ready${pending}; waiting up to ${this.secondsLeft} s more`,
    };
  }

  private evaluate(): void {
    if (this.open) return;
    const all = this.registry.list(this.role);
    const prepared = this.holds.size === 0 && all.every((s) => s.status !== 'preparing');
    if (!prepared && Date.now() < this.deadline) return;
    this.open = true;
    clearTimeout(this.timer);
    for (const off of this.cleanup.splice(0)) off();
    const ready = all.filter((s) => s.status === 'ready').length;
    if (prepared) this.logger.log(`startup: all ${all.length} servers prepared (${ready} ready)`);
    else this.logger.warn(`startup wait of ${this.waitMs / 1000} s is over with ${ready} of ${all.length} servers ready; serving with what is ready`);
  }
}
