import type * as http from 'node:http';
import type { GenerationPlan } from './generation-plan';
import { SSE_HEADERS, sendJson } from './sim-http';
import { SimResponseMetrics } from './sim-response-metrics';
import type { SimState } from './sim-state';

/** Writes a planned answer: at once when it has no latency and a batch slot is free, else timed. */
export function answerGeneration(state: SimState, req: http.IncomingMessage, res: http.ServerResponse, plan: GenerationPlan): void {
  const metrics = SimResponseMetrics.asked(state, req, plan);
  const waits = plan.initialDelayMs > 0 || (state.latency.decodeMsPerToken > 0 && plan.decodeSteps > 0);
  if (!waits && state.slots.tryAcquire()) {
    try {
      writeAll(state, req, res, plan, metrics);
    } finally {
      state.slots.release();
    }
    return;
  }
  void answerLater(state, req, res, plan, metrics);
}

/** Zero-latency path: the whole answer in one go, no timers. */
function writeAll(state: SimState, req: http.IncomingMessage, res: http.ServerResponse, plan: GenerationPlan, metrics: SimResponseMetrics | undefined): void {
  const truncated = plan.fault?.kind === 'truncated_stream';
  if (plan.body !== undefined) {
    if (truncated) return truncateBody(req, res, plan.body);
    sendJson(res, 200, plan.body, metrics?.headers());
  } else {
    const events = plan.steps!.flat();
    res.writeHead(200, SSE_HEADERS);
    if (truncated) {
      // Destroy only once the partial stream is flushed, so the client sees it cut short.
      res.write(events.slice(0, Math.max(1, Math.floor(events.length / 2))).join(''), () => req.socket.destroy());
      return;
    }
    res.end(events.join('') + (metrics?.event() ?? ''));
  }
  completed(state, plan);
}

async function answerLater(state: SimState, req: http.IncomingMessage, res: http.ServerResponse, plan: GenerationPlan, metrics: SimResponseMetrics | undefined): Promise<void> {
  const scope = state.openScope(res);
  try {
    await scope.acquireSlot();
    metrics?.scheduled();
    await scope.sleep(plan.initialDelayMs);
    if (scope.closed) return;
    metrics?.firstToken();
    const decodeMs = state.latency.decodeMsPerToken;
    if (plan.body !== undefined) {
      await scope.sleep(decodeMs * plan.decodeSteps);
      if (scope.closed) return;
      if (plan.fault?.kind === 'truncated_stream') return truncateBody(req, res, plan.body);
      sendJson(res, 200, plan.body, metrics?.headers());
      completed(state, plan);
      return;
    }
    const steps = plan.steps!;
    const cutAt = plan.fault?.kind === 'truncated_stream' ? Math.max(1, Math.floor(steps.length / 2)) : -1;
    res.writeHead(200, SSE_HEADERS);
    for (let s = 0; s < steps.length; s++) {
      if (s > 0) await scope.sleep(decodeMs);
      if (scope.closed) return;
      if (s === cutAt) {
        req.socket.destroy();
        return;
      }
      res.write(steps[s].join(''));
    }
    res.end(metrics?.event());
    completed(state, plan);
  } finally {
    scope.finish();
  }
}

function truncateBody(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.write(body.slice(0, Math.floor(body.length / 2)), () => req.socket.destroy());
}

function completed(state: SimState, plan: GenerationPlan): void {
  if (plan.consumeCtxId !== undefined) state.registry?.consume(plan.consumeCtxId);
  if (plan.perfCtxId !== undefined) state.perf.record(plan.perfCtxId, plan.arrivedAt, plan.arrivedAt + plan.initialDelayMs / 1000);
}
