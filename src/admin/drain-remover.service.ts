import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ServerRegistry, type ServerState } from '../servers';
import { RequestEvents } from '../request-events';

type OnRemoved = (server: ServerState) => void;

/** Removes drained servers as soon as their last in-flight request has finished. */
@Injectable()
export class DrainRemover implements OnModuleInit, OnModuleDestroy {
  private readonly pending = new Map<ServerState, OnRemoved>();
  private unsubscribe: Array<() => void> = [];
  /**
   * Load is released inside each router's finishRequest; a custom policy may do that after
   * the request-done event, so a slow sweep backs up the event-driven one.
   */
  private fallback?: NodeJS.Timeout;

  constructor(
    private readonly registry: ServerRegistry,
    private readonly events: RequestEvents,
  ) {}

  onModuleInit(): void {
    const onDone = (): void => this.sweep();
    this.events.on('requestDone', onDone);
    const off = this.registry.onEvent((event) => {
      // Someone else removed it, or it was put back in service: nothing left to do.
      if (event.type === 'removed' || event.server.status !== 'draining') this.forget(event.server);
    });
    this.unsubscribe = [() => this.events.off('requestDone', onDone), off];
  }

  onModuleDestroy(): void {
    for (const off of this.unsubscribe) off();
    this.pending.clear();
    this.stopFallback();
  }

  /** The server must already be draining; it is removed now if idle, else when it becomes so. */
  removeWhenIdle(server: ServerState, onRemoved: OnRemoved): void {
    this.pending.set(server, onRemoved);
    this.sweep();
    if (this.pending.size && !this.fallback) {
      this.fallback = setInterval(() => this.sweep(), 1_000);
      this.fallback.unref();
    }
  }

  isPending(server: ServerState): boolean {
    return this.pending.has(server);
  }

  private sweep(): void {
    for (const [server, onRemoved] of this.pending) {
      if (server.activeRequests > 0) continue;
      this.pending.delete(server);
      this.registry.remove(server);
      onRemoved(server);
    }
    if (this.pending.size === 0) this.stopFallback();
  }

  private forget(server: ServerState): void {
    this.pending.delete(server);
    if (this.pending.size === 0) this.stopFallback();
  }

  private stopFallback(): void {
    if (this.fallback) clearInterval(this.fallback);
    this.fallback = undefined;
  }
}
