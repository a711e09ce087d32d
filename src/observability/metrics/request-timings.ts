import type { RequestDoneEvent } from '../../request-events';

/** One request's phases in seconds, measured from its arrival at the router. */
export interface PhaseDurations {
  /** Arrival to the end of the answer (or of the failure). */
  e2e: number;
  /** Before the disagg flow started: body parsing, validation, admission. */
  preFlow: number;
  /** The context call: request sent to its answer read. */
  context?: number;
  /** Arrival to the generation answer's first byte (the first token for a stream). */
  firstToken?: number;
  /** The generation call: request sent to the last byte relayed. */
  generation?: number;
  /** e2e minus the time spent in upstream calls (context + generation). */
  overhead: number;
}

/**
 * Derives phase durations from the flow's timings (ms since the flow started) plus the time
 * the request spent before the flow. Upstream time includes picking the server and, for a
 * stream, relaying its chunks, so the overhead is the router's own time outside those calls.
 */
export function phaseDurations(done: RequestDoneEvent, preFlowMs: number): PhaseDurations {
  const t = done.timings;
  let upstream = 0;
  let context: number | undefined;
  if (t.contextStart !== undefined) {
    const end = t.contextEnd ?? t.generationStart ?? t.end;
    context = end - t.contextStart;
    upstream += context;
  }
  let generation: number | undefined;
  if (t.generationStart !== undefined) {
    generation = t.end - t.generationStart;
    upstream += generation;
  }
  const e2e = preFlowMs + t.end;
  return {
    e2e: e2e / 1000,
    preFlow: preFlowMs / 1000,
    context: context !== undefined && t.contextEnd !== undefined ? context / 1000 : undefined,
    firstToken: t.firstByte !== undefined ? (preFlowMs + t.firstByte) / 1000 : undefined,
    generation: generation !== undefined ? generation / 1000 : undefined,
    overhead: Math.max(0, e2e - upstream) / 1000,
  };
}

/** The last phase a request reached: where it ended, or where it failed. */
export function lastPhase(done: RequestDoneEvent): 'routing' | 'context' | 'generation' {
  if (done.timings.generationStart !== undefined) return 'generation';
  if (done.timings.contextStart !== undefined) return 'context';
  return 'routing';
}
