import type { ServerRole } from '../config';
import type { RequestTrace } from '../observability/tracing';
import type { ResponsePerfCapture } from '../observability';
import { HttpApiError, REQUEST_ID_HEADER } from '../common';
import type { BlockChains, RequestKind, RouteResult, Router, RoutingRequest, SubagentAffinity, TokenIds } from '../routing';
import type { ClientChannel } from './client-channel';
import { RequestDeadline } from './request-deadline';
import type { RequestDoneEvent, RequestTimings } from '../request-events';

/** The routing request as the flow owns it: what one pick returned feeds the next pick. */
export interface FlowRouting extends RoutingRequest {
  tokenIds?: TokenIds;
  untokenized?: string;
  blockChains?: BlockChains;
}

/** A server a router handed out for this request, finished exactly once (see UpstreamDispatch). */
export interface Reservation {
  router: Router;
  route: RouteResult;
}

/** The per-request state every part of the flow reads and fills in. */
export interface Flow {
  routing: FlowRouting;
  kind: RequestKind;
  channel: ClientChannel;
  started: number;
  timings: RequestTimings;
  /** Filled in as the flow goes and emitted as it is at the end (one object per request). */
  done: RequestDoneEvent;
  /** Upstream request headers, the same for every call of this request but the accept. */
  headers: Record<string, string>;
  streamHeaders: Record<string, string> | undefined;
  /** Routers that reserved a server for this request, finished exactly once each. */
  pending: Router[];
  /** When the pick under way asked its router (performance.now()): picks of one request never overlap. */
  pickStarted: number;
  /** timeouts.request_s for the whole request (and the first event of a stream). */
  deadline: RequestDeadline;
  /** The server the request last went to (two fields: no object per call), named when a deadline passes. */
  upstreamRole: ServerRole | undefined;
  upstreamUrl: string | undefined;
  /** Spans of this request; undefined while tracing is off. */
  trace: RequestTrace | undefined;
  /** TensorRT-LLM's per-response metrics of this request; undefined unless asked for or written. */
  perf: ResponsePerfCapture | undefined;
}

/** What the routers read of a request whose own kind they do not (see DisaggService.handle). */
export interface RoutingView {
  kind: RequestKind;
  body: Record<string, unknown>;
}

export interface FlowStart {
  disaggId: number;
  kind: RequestKind;
  body: Record<string, unknown>;
  routingView?: RoutingView;
  channel: ClientChannel;
  headers: RoutingRequest['headers'];
  /** A sub-agent's parent session id from the configured gateway header. */
  subagentAffinity: SubagentAffinity | undefined;
  requestMs: number;
  trace: RequestTrace | undefined;
}

export function newFlow(start: FlowStart): Flow {
  const { kind, channel } = start;
  // Every field present from the start: one object shape per request, no spreads at the end.
  const timings: RequestTimings = { contextStart: undefined, contextEnd: undefined, generationStart: undefined, firstByte: undefined, end: 0 };
  return {
    routing: {
      id: String(start.disaggId), kind: start.routingView?.kind ?? kind, body: start.routingView?.body ?? start.body, headers: start.headers,
      subagentAffinity: start.subagentAffinity,
    },
    kind,
    channel,
    started: performance.now(),
    timings,
    done: {
      requestId: channel.requestId, kind, stream: start.body.stream === true, status: 0, mode: 'disagg', retries: 0,
      contextServer: undefined, generationServer: undefined, errorKind: undefined, ctxRequestId: undefined, streamChunks: 0, timings, startedAt: 0,
    },
    headers: { 'content-type': 'application/json', [REQUEST_ID_HEADER]: channel.requestId },
    streamHeaders: undefined,
    pending: [],
    pickStarted: 0,
    deadline: new RequestDeadline(channel.abort, start.requestMs),
    upstreamRole: undefined,
    upstreamUrl: undefined,
    trace: start.trace,
    perf: undefined,
  };
}

/** The 504 of a request whose deadline passed (the abort it fired is not the client leaving). */
export function deadlineError(flow: Flow): HttpApiError {
  const server = flow.upstreamUrl ? `${flow.upstreamRole} server ${flow.upstreamUrl}` : 'the cluster';
  flow.done.errorKind = 'timeout';
  return flow.deadline.expired === 'first_event'
    ? new HttpApiError(504, `${server} sent no event within timeouts.generation_first_byte_s`, { code: 'upstream_timeout' })
    : new HttpApiError(504, `the request did not complete within timeouts.request_s (${flow.deadline.requestMs / 1000} s), waiting on ${server}`, { code: 'upstream_timeout' });
}
