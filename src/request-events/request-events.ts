import { Injectable } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import type { ServerRole } from '../config';
import type { ServerState } from '../servers';
import type { RequestKind, UpstreamFailureKind } from '../common';

export interface UpstreamFailureEvent {
  requestId: string;
  role: ServerRole;
  server: ServerState;
  kind: UpstreamFailureKind;
  detail: string;
}

export interface RoutedEvent {
  role: ServerRole;
  server: ServerState;
  policy: string;
  matchedTokens?: number;
  promptTokens?: number;
  /** The prompt could not be tokenized with the model's tokenizer: why. */
  untokenized?: string;
  /** How long the policy took to pick (tokenizing and hashing included), in seconds. */
  routingSeconds: number;
}

/** Per-phase timings of one request, in ms since it arrived (absent when a phase did not run). */
export interface RequestTimings {
  contextStart?: number;
  contextEnd?: number;
  generationStart?: number;
  firstByte?: number;
  end: number;
}

export interface RequestDoneEvent {
  requestId: string;
  kind: RequestKind;
  stream: boolean;
  status: number;
  /** `disagg`, `aggregated`, `context_only_finish` (early finish) or `local_prefill` (conditional). */
  mode: string;
  retries: number;
  contextServer?: string;
  generationServer?: string;
  errorKind?: string;
  /** The context worker's ctx_request_id, which joins the workers' own /perf_metrics. */
  ctxRequestId?: number;
  /** Chunks read from a streamed generation answer (0 for a non-streamed one). */
  streamChunks: number;
  timings: RequestTimings;
  startedAt: number;
}

/** A request the front door refused before the flow (its body or content type did not validate). */
export interface RequestRefusedEvent {
  requestId: string;
  status: number;
}

interface RequestEventMap {
  upstreamFailure: [UpstreamFailureEvent];
  refused: [RequestRefusedEvent];
  routed: [RoutedEvent];
  requestDone: [RequestDoneEvent];
  retry: [{ role: ServerRole; requestId: string }];
}

/**
 * What happens on the request path, for observers (metrics, passive health checks, perf
 * history) that must not sit inside the flow itself.
 */
@Injectable()
export class RequestEvents extends EventEmitter<RequestEventMap> {
  constructor() {
    super();
    this.setMaxListeners(0);
  }
}
