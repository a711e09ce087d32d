import { ApiKeyRateLimitGuard } from '../../../src/admission/api-key-rate-limit.guard';
import { KvEventPoller } from '../../../src/kv-cache/kv-event-poller';
import { StartupGuard } from '../../../src/health/startup.guard';
import { requestContextStorage } from '../../../src/observability/context/request-context';
import { MetricsService } from '../../../src/observability/metrics/metrics.service';
import { RequestContextHooks } from '../../../src/observability/context/request-context.hooks';
import { RequestEvents } from '../../../src/request-events';

/**
 * Cost attribution only (`--ablate=...` of the router process in the ablation table): each
 * switch turns one per-request component into a no-op, so the difference in CPU per request
 * against the full router is that component's cost. Never used outside the bench.
 */
export const ABLATIONS: Record<string, () => void> = {
  /** The request-context Fastify hooks (onRequest, preHandler with ALS.run, onResponse metric). */
  hooks: () => {
    RequestContextHooks.prototype.onModuleInit = () => undefined;
  },
  /** RequestEvents (routed x2, requestDone per request) and whatever listens to them. */
  events: () => {
    RequestEvents.prototype.emit = () => false;
  },
  /** AsyncLocalStorage.run in the preHandler hook (enables promise hooks process-wide on Node 20). */
  als: () => {
    requestContextStorage.run = ((_store: unknown, cb: (...a: unknown[]) => unknown, ...a: unknown[]) => cb(...a)) as typeof requestContextStorage.run;
  },
  /** prom-client counters and histograms fed on every request. */
  metrics: () => {
    for (const m of ['httpResponse', 'requestDone', 'routed'] as const) MetricsService.prototype[m] = () => undefined;
  },
  /** kv_cache_aware's drain of a worker's KV events after each request (an HTTP call while one is not already running). */
  kvpoll: () => {
    KvEventPoller.prototype.poll = () => Promise.resolve();
  },
  /** The global guards' own work (Nest's enhancer machinery stays). */
  enhancers: () => {
    StartupGuard.prototype.canActivate = () => true;
    ApiKeyRateLimitGuard.prototype.canActivate = () => true;
  },
};

export function applyAblations(list: string): void {
  for (const name of list.split(',').filter(Boolean)) {
    const apply = ABLATIONS[name];
    if (!apply) throw new Error(`unknown ablation '${name}'; known: ${Object.keys(ABLATIONS).join(', ')}`);
    apply();
  }
}
